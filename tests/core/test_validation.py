"""Validation of one frame (contract: "Validation of one frame, in order"), batches, FrameError fields."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from ._support import stream
from .contract_text import (
    BAD_JSON,
    BAD_JSONRPC,
    BOTH,
    CODE_TYPE,
    DEPTH,
    ERROR_TYPE,
    ID_TYPE,
    INVALID,
    MESSAGE_TYPE,
    METHOD_TYPE,
    NEITHER,
    NO_JSONRPC,
    NOT_OBJECT,
    NULL_REQ_ID,
    NULL_RESULT_ID,
    PARAMS_TYPE,
    PARSE,
    REQ_WITH_RESULT,
    RESP_NO_ID,
    nest,
    utf8_at,
)

# (frame, code, message, FrameError.id, FrameError.notification). An invalid envelope is an Invalid
# Request even with "method" and no "id" (JSON-RPC 2.0 section 5): notification is always False.
ERRORS = [
    # 1. UTF-8
    pytest.param(b'{"jsonrpc":"2.0","method":"\xff"}', PARSE, utf8_at(27), None, False, id="utf8-ff"),
    pytest.param(b"\x80", PARSE, utf8_at(0), None, False, id="utf8-lone-continuation"),
    pytest.param(b'{"a":"\xc3\xa9\xe2\x82"}', PARSE, utf8_at(8), None, False, id="utf8-truncated-sequence"),
    pytest.param(b'{"a":"\xc0\xaf"}', PARSE, utf8_at(6), None, False, id="utf8-overlong"),
    pytest.param(b'{"a":"\xed\xa0\x80"}', PARSE, utf8_at(6), None, False, id="utf8-encoded-surrogate"),
    pytest.param(b'{"a":"\xf4\x90\x80\x80"}', PARSE, utf8_at(6), None, False, id="utf8-above-10ffff"),
    pytest.param(b'{"a":1}\xe2\x82', PARSE, utf8_at(7), None, False, id="utf8-truncated-at-end"),
    pytest.param(b"\xef\xbb{}", PARSE, utf8_at(0), None, False, id="utf8-partial-bom"),
    pytest.param(b"[" * 200 + b"\xff", PARSE, utf8_at(200), None, False, id="utf8-before-depth"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":7,"method":"m\xfe"}',
        PARSE,
        utf8_at(35),
        None,
        False,
        id="utf8-id-not-reported",
    ),
    # 2. depth
    pytest.param(nest(129), PARSE, DEPTH, None, False, id="depth-129"),
    pytest.param(b"[" * 129, PARSE, DEPTH, None, False, id="depth-on-invalid-json"),
    pytest.param(b"{" * 129, PARSE, DEPTH, None, False, id="depth-braces"),
    pytest.param(b"[{" * 64 + b"[", PARSE, DEPTH, None, False, id="depth-mixed"),
    pytest.param(b"]" * 5 + b"[" * 129, PARSE, DEPTH, None, False, id="depth-never-below-zero"),
    pytest.param(b"]" * 5 + b"[" * 128, PARSE, BAD_JSON, None, False, id="depth-128-after-closers"),
    pytest.param(b"[" * 128 + b"]" * 128 + b"[" * 128, PARSE, BAD_JSON, None, False, id="depth-128-twice"),
    pytest.param(b'["\\\\"' + b"[" * 129, PARSE, DEPTH, None, False, id="depth-escaped-backslash"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + b"[" * 128 + b"]" * 128 + b"}",
        PARSE,
        DEPTH,
        None,
        False,
        id="depth-valid-json-too-deep",
    ),
    # 3. invalid JSON
    pytest.param(b'{"jsonrpc":"2.0","method":"m"} x', PARSE, BAD_JSON, None, False, id="trailing-garbage"),
    pytest.param(b'{"jsonrpc":"2.0","method":"m"}{}', PARSE, BAD_JSON, None, False, id="two-values"),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m",}', PARSE, BAD_JSON, None, False, id="trailing-comma-object"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":[1,]}', PARSE, BAD_JSON, None, False, id="trailing-comma"
    ),
    pytest.param(b'{"jsonrpc":"2.0","method":"m","params":[NaN]}', PARSE, BAD_JSON, None, False, id="nan"),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":[Infinity]}', PARSE, BAD_JSON, None, False, id="inf"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"\\ud800"}', PARSE, BAD_JSON, None, False, id="lone-high-surrogate"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"\\udc00x"}', PARSE, BAD_JSON, None, False, id="lone-low-surrogate"
    ),
    pytest.param(b'{"jsonrpc":"2.0","method":"a\tb"}', PARSE, BAD_JSON, None, False, id="raw-tab-in-string"),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"a\x00b"}', PARSE, BAD_JSON, None, False, id="raw-nul-in-string"
    ),
    pytest.param(b'{"jsonrpc":"2.0","method":"a\x1fb"}', PARSE, BAD_JSON, None, False, id="raw-1f-in-string"),
    pytest.param(b"{'jsonrpc':'2.0'}", PARSE, BAD_JSON, None, False, id="single-quotes"),
    pytest.param(b'{"jsonrpc":"2.0","id":01,"method":"m"}', PARSE, BAD_JSON, None, False, id="leading-zero"),
    pytest.param(b'{"jsonrpc":"2.0","id":5,', PARSE, BAD_JSON, None, False, id="truncated-id-not-reported"),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m"}\x0c', PARSE, BAD_JSON, None, False, id="form-feed-whitespace"
    ),
    pytest.param(b'{"a":"\\x"}', PARSE, BAD_JSON, None, False, id="bad-escape"),
    pytest.param(b'{"a":"\\u12"}', PARSE, BAD_JSON, None, False, id="short-unicode-escape"),
    pytest.param(b'{"a":tru}', PARSE, BAD_JSON, None, False, id="bad-literal"),
    pytest.param(b'{"a":1.}', PARSE, BAD_JSON, None, False, id="bad-number"),
    pytest.param(b'{"a":+1}', PARSE, BAD_JSON, None, False, id="plus-sign"),
    # 4. not an object
    pytest.param(b"1", INVALID, NOT_OBJECT, None, False, id="number"),
    pytest.param(b'"x"', INVALID, NOT_OBJECT, None, False, id="string"),
    pytest.param(b"null", INVALID, NOT_OBJECT, None, False, id="null"),
    pytest.param(b"true", INVALID, NOT_OBJECT, None, False, id="true"),
    pytest.param(b" 1e400 ", INVALID, NOT_OBJECT, None, False, id="huge-float"),
    # 5.1 jsonrpc
    pytest.param(b'{"id":7,"method":"m"}', INVALID, NO_JSONRPC, 7, False, id="no-jsonrpc"),
    pytest.param(b"{}", INVALID, NO_JSONRPC, None, False, id="empty-object"),
    pytest.param(b'{"method":"m"}', INVALID, NO_JSONRPC, None, False, id="no-jsonrpc-notification"),
    pytest.param(
        b'{"jsonrpc":"1.0","id":"a","method":"m"}', INVALID, BAD_JSONRPC, "a", False, id="jsonrpc-1.0"
    ),
    pytest.param(b'{"jsonrpc":2.0,"id":1,"result":1}', INVALID, BAD_JSONRPC, 1, False, id="jsonrpc-number"),
    pytest.param(b'{"jsonrpc":null,"method":"m"}', INVALID, BAD_JSONRPC, None, False, id="jsonrpc-null"),
    pytest.param(
        b'{"jsonrpc":"2.0 ","id":1,"method":"m"}', INVALID, BAD_JSONRPC, 1, False, id="jsonrpc-space"
    ),
    pytest.param(
        b'{"jsonrpc":["2.0"],"id":1,"method":"m"}', INVALID, BAD_JSONRPC, 1, False, id="jsonrpc-array"
    ),
    pytest.param(
        b'{"jsonrpc":"1.0","method":1,"result":2}', INVALID, BAD_JSONRPC, None, False, id="jsonrpc-first"
    ),
    # 5.2 requests and notifications
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":1}', INVALID, METHOD_TYPE, 1, False, id="method-number"),
    pytest.param(b'{"jsonrpc":"2.0","method":null}', INVALID, METHOD_TYPE, None, False, id="method-null"),
    pytest.param(b'{"jsonrpc":"2.0","method":["m"]}', INVALID, METHOD_TYPE, None, False, id="method-array"),
    pytest.param(
        b'{"jsonrpc":"2.0","method":1,"result":1,"id":null}',
        INVALID,
        METHOD_TYPE,
        None,
        False,
        id="method-first",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"method":"m","result":1}',
        INVALID,
        REQ_WITH_RESULT,
        1,
        False,
        id="req-result",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","error":null}',
        INVALID,
        REQ_WITH_RESULT,
        None,
        False,
        id="req-null-error",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"x","method":"m","result":null,"params":1}',
        INVALID,
        REQ_WITH_RESULT,
        "x",
        False,
        id="result-before-params",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":1}', INVALID, PARAMS_TYPE, 1, False, id="params-1"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":"a"}', INVALID, PARAMS_TYPE, None, False, id="params-str"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":null}', INVALID, PARAMS_TYPE, None, False, id="params-null"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":true,"id":null}',
        INVALID,
        PARAMS_TYPE,
        None,
        False,
        id="params-1st",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","id":null}', INVALID, NULL_REQ_ID, None, False, id="req-id-null"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","id":true}', INVALID, ID_TYPE, None, False, id="req-id-bool"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","id":1.0}', INVALID, ID_TYPE, None, False, id="req-id-float"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","id":1e2}', INVALID, ID_TYPE, None, False, id="req-id-exponent"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","id":-0.0}', INVALID, ID_TYPE, None, False, id="req-id-neg-zero"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","id":{}}', INVALID, ID_TYPE, None, False, id="req-id-object"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","id":[1]}', INVALID, ID_TYPE, None, False, id="req-id-array"
    ),
    # 5.3 responses
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}', INVALID, BOTH, 1, False, id="result-and-error"
    ),
    pytest.param(b'{"jsonrpc":"2.0","result":1,"error":1}', INVALID, BOTH, None, False, id="both-before-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":1}', INVALID, NEITHER, 1, False, id="neither"),
    pytest.param(b'{"jsonrpc":"2.0"}', INVALID, NEITHER, None, False, id="neither-no-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":true}', INVALID, NEITHER, None, False, id="neither-before-id-type"),
    pytest.param(b'{"jsonrpc":"2.0","result":1}', INVALID, RESP_NO_ID, None, False, id="result-no-id"),
    pytest.param(
        b'{"jsonrpc":"2.0","error":"x"}', INVALID, RESP_NO_ID, None, False, id="no-id-before-error-type"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":false,"result":1}', INVALID, ID_TYPE, None, False, id="resp-id-bool"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":2.5,"error":"x"}', INVALID, ID_TYPE, None, False, id="id-before-error"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":{"a":1},"result":1}', INVALID, ID_TYPE, None, False, id="resp-id-object"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":null,"result":1}', INVALID, NULL_RESULT_ID, None, False, id="result-null-id"
    ),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"error":"x"}', INVALID, ERROR_TYPE, 1, False, id="error-str"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"error":null}', INVALID, ERROR_TYPE, 1, False, id="error-null"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"error":[]}', INVALID, ERROR_TYPE, 1, False, id="error-array"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"error":{}}', INVALID, CODE_TYPE, 1, False, id="error-empty"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}', INVALID, CODE_TYPE, 1, False, id="error-no-code"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":"m"}}',
        INVALID,
        CODE_TYPE,
        1,
        False,
        id="code-float",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}',
        INVALID,
        CODE_TYPE,
        1,
        False,
        id="code-str",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":true,"message":"m"}}',
        INVALID,
        CODE_TYPE,
        1,
        False,
        id="code-bool",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}', INVALID, MESSAGE_TYPE, 1, False, id="no-message"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":null}}',
        INVALID,
        MESSAGE_TYPE,
        1,
        False,
        id="msg-null",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"e","error":{"code":1,"message":1}}',
        INVALID,
        MESSAGE_TYPE,
        "e",
        False,
        id="msg-int",
    ),
    # 6. the id carried by step-5 failures
    pytest.param(b'{"id":"","method":"m"}', INVALID, NO_JSONRPC, "", False, id="id-empty-string"),
    pytest.param(b'{"id":-0,"method":"m"}', INVALID, NO_JSONRPC, 0, False, id="id-minus-zero"),
    pytest.param(
        b'{"id":1180591620717411303424,"method":"m"}', INVALID, NO_JSONRPC, 2**70, False, id="id-big-int"
    ),
    pytest.param(b'{"id":"1","method":"m"}', INVALID, NO_JSONRPC, "1", False, id="id-string-one"),
    pytest.param(
        b'{"id":"\\u00e9\\n","method":"m"}', INVALID, NO_JSONRPC, "\u00e9\n", False, id="id-escaped"
    ),
    pytest.param(b'{"id":1,"id":"x","method":"m"}', INVALID, NO_JSONRPC, "x", False, id="id-duplicate-last"),
    pytest.param(
        b'{"jsonrpc":"1","jsonrpc":"2.0","id":1}', INVALID, NEITHER, 1, False, id="duplicate-jsonrpc"
    ),
]


# The same table as (frame, (code, message, id, notification)).
ERROR_CASES = [pytest.param(p.values[0], p.values[1:], id=p.id) for p in ERRORS]


@pytest.mark.parametrize(("frame", "expected"), ERROR_CASES)
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_frame_errors(backend: ModuleType, lazy: bool, frame: bytes, expected: tuple[object, ...]) -> None:
    code, message, error_id, notification = expected
    prefix = b'{"jsonrpc":"2.0","method":"ok"}\r\n\n'
    first, error = stream(backend, prefix + frame + b"\n", lazy=lazy)
    assert first.kind == "notification"
    assert (error.code, error.message) == (code, message)
    assert error.id == error_id
    assert type(error.id) is type(error_id)
    assert error.notification is notification
    assert (error.offset, error.preview, error.batch, error.raw) == (len(prefix), frame[:64], None, frame)


@pytest.mark.parametrize(("frame", "expected"), ERROR_CASES)
def test_frame_errors_one_shot(backend: ModuleType, frame: bytes, expected: tuple[object, ...]) -> None:
    (error,) = backend.decode(frame)
    assert (error.code, error.message, error.id, error.notification) == expected
    assert (error.offset, error.preview, error.raw) == (0, frame[:64], frame)


VALID = [
    pytest.param(nest(128), "request", id="depth-128"),
    pytest.param(b'{"jsonrpc":"2.0","method":"m","params":[],"id":"r"}', "request", id="params-array"),
    pytest.param(b'{"jsonrpc":"2.0","method":"m","params":{}}', "notification", id="params-object"),
    pytest.param(b'{"jsonrpc":"2.0","method":""}', "notification", id="empty-method"),
    pytest.param(b'{"jsonrpc":"2.0","id":-0,"method":"m"}', "request", id="id-minus-zero"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":null}', "result", id="result-null"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":false}', "result", id="result-false"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":""}}', "error", id="error-null-id"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x","data":[1]}}', "error", id="error-data"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":1180591620717411303424,"message":"x"}}',
        "error",
        id="code-big",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","x":{"y":[1,{}]}}', "notification", id="unknown-member-ignored"
    ),
    pytest.param(b' \t{"jsonrpc":"2.0","method":"m"}\t \r ', "notification", id="surrounding-whitespace"),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"' + b"[" * 200 + b'"}', "notification", id="depth-ignores-strings"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"\\"' + b"{" * 200 + b'"}', "notification", id="depth-escaped-quote"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":["\\ud83d\\ude00"]}', "notification", id="surrogate-pair"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":[1e400,-1e400,1e-400]}', "notification", id="inf-values"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":["[[[{{{"]}', "notification", id="brackets-in-string"
    ),
    pytest.param(b'{"jsonrpc":"2.0","method":"m","params":["\\u0000"]}', "notification", id="escaped-nul"),
    pytest.param(b'{"jsonrpc":"1.0","jsonrpc":"2.0","method":"m"}', "notification", id="duplicate-last-wins"),
]


@pytest.mark.parametrize(("frame", "kind"), VALID)
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_valid_frames(backend: ModuleType, lazy: bool, frame: bytes, kind: str) -> None:
    (message,) = stream(backend, frame + b"\n", lazy=lazy)
    assert message.kind == kind
    assert message.raw == frame
    assert (message.params, message.result) == _expected_payload(frame, kind)


def _expected_payload(frame: bytes, kind: str) -> tuple[object, object]:
    value = json.loads(frame)
    if kind in ("request", "notification"):
        return value.get("params"), None
    return None, value.get("result")


def test_json_number_semantics(backend: ModuleType) -> None:
    frame = (
        b'{"jsonrpc":"2.0","method":"m","params":'
        + b"[1e400,-1e400,1e-400,-0,-0.0,1.0,1E2,12345678901234567890123]}"
    )
    (message,) = backend.decode(frame)
    values = message.params
    assert values[:3] == [float("inf"), float("-inf"), 0.0]
    assert [type(v) for v in values] == [float, float, float, int, float, float, float, int]
    assert values[3] == 0
    assert str(values[4]) == "-0.0"
    assert values[5:] == [1.0, 100.0, 12345678901234567890123]


# ---- FrameError ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        pytest.param(
            b"{",
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON"}}\n',
            id="parse-error",
        ),
        pytest.param(
            b'{"id":7}',
            b'{"jsonrpc":"2.0","id":7,"error":{"code":-32600,'
            b'"message":"Invalid Request: missing \\"jsonrpc\\""}}\n',
            id="quotes-escaped",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":"\\u00e9\\"","result":1,"error":{}}',
            '{"jsonrpc":"2.0","id":"\u00e9\\"","error":{"code":-32600,"message":'
            '"Invalid Request: a response cannot have both \\"result\\" and \\"error\\""}}\n'.encode(),
            id="string-id-utf8",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":-1180591620717411303424}',
            b'{"jsonrpc":"2.0","id":-1180591620717411303424,"error":{"code":-32600,'
            b'"message":"Invalid Request: missing \\"method\\", \\"result\\" or \\"error\\""}}\n',
            id="big-int-id",
        ),
    ],
)
def test_to_response(backend: ModuleType, frame: bytes, expected: bytes) -> None:
    (error,) = backend.decode(frame)
    assert error.to_response() == expected


def test_to_response_of_every_error(backend: ModuleType) -> None:
    for param in ERRORS:
        frame, code, message, error_id, _ = param.values
        (error,) = backend.decode(frame)  # type: ignore[arg-type]
        expected = {"jsonrpc": "2.0", "id": error_id, "error": {"code": code, "message": message}}
        compact = json.dumps(expected, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        assert error.to_response() == compact, param.id


def test_frame_error_preview_is_64_bytes(backend: ModuleType) -> None:
    frame = b"{" + b'"a":1,' * 100
    (error,) = backend.decode(frame)
    assert error.preview == frame[:64]
    assert len(error.preview) == backend.PREVIEW_BYTES


def test_frame_error_equality_and_repr(backend: ModuleType) -> None:
    (one,) = backend.decode(b"{")
    (two,) = backend.decode(b"{")
    (other_offset,) = stream(backend, b"\n{")
    (other_preview,) = backend.decode(b"{{")
    assert one == two
    assert one != other_offset
    assert one != other_preview
    assert repr(one) == "FrameError(code=-32700, message='Parse error: invalid JSON', offset=0)"
    assert (one.code, one.message, one.id, one.offset, one.preview, one.batch, one.notification) == (
        -32700,
        "Parse error: invalid JSON",
        None,
        0,
        b"{",
        None,
        False,
    )


def test_frame_error_is_immutable(backend: ModuleType) -> None:
    (error,) = backend.decode(b"{")
    with pytest.raises((AttributeError, TypeError)):
        error.code = 1
