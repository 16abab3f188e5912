"""The drop-in hands the SDK exactly the objects its own transport would, and writes the same bytes.

Each frame goes through the core ``Decoder`` and ``to_session_item`` on one side and the SDK's own
``jsonrpc_message_adapter.validate_json`` on the other; the two are compared field by field (class, values,
``model_fields_set`` at every level, extras), and re-encoded by both writers.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.shared.message import SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import AnyUrl, BaseModel, ValidationError

from mcpframe import core
from mcpframe.compat import _messages
from mcpframe.compat._messages import InvalidFrameError, encode_message, encode_messages, to_session_item

VALID = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}',
    b'{"jsonrpc":"2.0","id":"req-7","method":"ping"}',
    b'{"jsonrpc":"2.0","id":0,"method":"x","params":{}}',
    b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"big"}',
    b'{"jsonrpc":"2.0","id":-5,"method":"neg","params":{"a":[1,2.5,null,true,{"b":"\\u00e9\\n"}]}}',
    b'{"id":3,"params":{"k":"v"},"method":"reordered","jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}',
    b'{"jsonrpc":"2.0","id":1,"result":{}}',
    '{"jsonrpc":"2.0","id":"a","result":{"content":[{"text":"\u00e9t\u00e9 \U0001f389"}]}}'.encode(),
    b'{"jsonrpc":"2.0","id":2,"result":{"x":1},"extra":"ignored by both"}',
    b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}',
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"why":"x"}}}',
    b'{"jsonrpc":"2.0","id":"e","error":{"code":1,"message":"m","data":null,"other":5}}',
]

SDK_REJECTS_CORE_ACCEPTS = [
    b'{"jsonrpc":"2.0","id":1,"method":"x","params":[1,2]}',
    b'{"jsonrpc":"2.0","method":"x","params":[]}',
    b'{"jsonrpc":"2.0","id":1,"result":[1]}',
    b'{"jsonrpc":"2.0","id":1,"result":"text"}',
    b'{"jsonrpc":"2.0","id":1,"result":null}',
]

BOTH_REJECT = [
    (b"not json", core.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1,"method":"x"', core.PARSE_ERROR),
    (b'[{"jsonrpc":"2.0","id":1,"method":"x"}]', core.INVALID_REQUEST),
    (b'{"id":1,"method":"x"}', core.INVALID_REQUEST),
    (b'{"jsonrpc":"1.0","id":1,"method":"x"}', core.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":true,"result":{}}', core.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":1}', core.INVALID_REQUEST),
    (b'"just a string"', core.INVALID_REQUEST),
]

# The core checks the JSON-RPC 2.0 envelope more strictly than the SDK's models: these reach the SDK as
# messages from its own transport, and as in-band InvalidFrameError from the drop-in.
STRICTER_THAN_SDK = [
    b'{"jsonrpc":"2.0","id":1.5,"method":"x"}',  # the SDK drops the id: a notification
    b'{"jsonrpc":"2.0","id":1,"method":"x","params":null}',
    b'{"jsonrpc":"2.0","id":1,"method":"x","result":{}}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":5.0,"message":"m"}}',
]


def decode_one(frame: bytes) -> SessionMessage | Exception:
    items = core.Decoder(batches=False).feed(frame + b"\n")
    assert len(items) == 1
    return to_session_item(items[0])


def assert_same_model(ours: BaseModel, sdk: BaseModel) -> None:
    assert type(ours) is type(sdk)
    assert ours.model_fields_set == sdk.model_fields_set
    assert ours.__pydantic_extra__ == sdk.__pydantic_extra__
    assert ours.__pydantic_private__ == sdk.__pydantic_private__
    for name in type(sdk).model_fields:
        mine, theirs = getattr(ours, name), getattr(sdk, name)
        if isinstance(theirs, BaseModel):
            assert isinstance(mine, BaseModel)
            assert_same_model(mine, theirs)
        else:
            assert mine == theirs
            assert type(mine) is type(theirs)
    assert ours == sdk


def sdk_dump(model: BaseModel) -> bytes:
    return model.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


@pytest.fixture(params=["slots", "model_construct"])
def constructor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways of building the models: the fast one must be chosen and agree with pydantic's own."""
    assert _messages._construct is _messages._slot_construct
    if request.param == "model_construct":
        monkeypatch.setattr(_messages, "_construct", _messages._model_construct)


@pytest.mark.usefixtures("constructor")
@pytest.mark.parametrize("frame", VALID)
def test_valid_frames_become_the_sdk_objects(frame: bytes) -> None:
    ours = decode_one(frame)
    sdk = jsonrpc_message_adapter.validate_json(frame, by_name=False)
    assert isinstance(ours, SessionMessage)
    assert ours.metadata is None
    assert_same_model(ours.message, sdk)
    assert encode_message(ours.message) == sdk_dump(sdk)
    assert encode_message(sdk) == sdk_dump(sdk)


@pytest.mark.parametrize("frame", SDK_REJECTS_CORE_ACCEPTS)
def test_sdk_model_rejections_are_the_sdk_exception(frame: bytes) -> None:
    ours = decode_one(frame)
    with pytest.raises(ValidationError) as sdk_error:
        jsonrpc_message_adapter.validate_json(frame, by_name=False)
    assert isinstance(ours, ValidationError)
    assert str(ours) == str(sdk_error.value)


@pytest.mark.parametrize(("frame", "code"), BOTH_REJECT)
def test_invalid_frames_are_in_band_errors(frame: bytes, code: int) -> None:
    ours = decode_one(frame)
    with pytest.raises(ValidationError):
        jsonrpc_message_adapter.validate_json(frame, by_name=False)
    assert isinstance(ours, InvalidFrameError)
    assert isinstance(ours, ValueError)
    assert ours.code == code
    assert ours.offset == 0
    assert ours.preview == frame[: core.PREVIEW_BYTES]
    assert str(ours) == ours.message


@pytest.mark.parametrize("frame", STRICTER_THAN_SDK)
def test_documented_divergences(frame: bytes) -> None:
    assert not isinstance(jsonrpc_message_adapter.validate_json(frame, by_name=False), Exception)
    ours = decode_one(frame)
    assert isinstance(ours, InvalidFrameError)
    assert ours.code == core.INVALID_REQUEST


def test_in_band_error_keeps_the_id() -> None:
    ours = decode_one(b'{"jsonrpc":"2.0","id":9,"method":"x","params":5}')
    assert isinstance(ours, InvalidFrameError)
    assert ours.id == 9


OUTBOUND: list[BaseModel] = [
    JSONRPCRequest(jsonrpc="2.0", id=1, method="x"),
    JSONRPCRequest(jsonrpc="2.0", id=1, method="x", params=None),
    JSONRPCRequest(jsonrpc="2.0", id="s", method="x", params={"a": (1, 2), "b": "\u2028\n\x00"}),
    JSONRPCNotification(jsonrpc="2.0", method="n", params={"f": 1.25, "big": 2**80}),
    JSONRPCResponse(jsonrpc="2.0", id=7, result={"uri": AnyUrl("https://example.com/a")}),
    JSONRPCResponse(jsonrpc="2.0", id=7, result={"nested": ErrorData(code=1, message="m")}),
    JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=-32600, message="bad")),
    JSONRPCError(jsonrpc="2.0", id=3, error=ErrorData(code=-1, message="m", data=None)),
    JSONRPCError(jsonrpc="2.0", id=3, error=ErrorData(code=-1, message="m", data={"k": [1]})),
]


@pytest.mark.parametrize("model", OUTBOUND, ids=repr)
def test_outbound_bytes_match_the_sdk_writer(model: BaseModel) -> None:
    assert encode_message(model) == sdk_dump(model)


def test_encode_messages_concatenates_one_line_each() -> None:
    messages: list[Any] = [SessionMessage(m) for m in OUTBOUND]  # type: ignore[arg-type]
    data = encode_messages(messages)
    assert data == b"".join(sdk_dump(m) for m in OUTBOUND)
    assert data.count(b"\n") == len(OUTBOUND)
