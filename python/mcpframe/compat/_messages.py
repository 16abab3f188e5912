"""Between the core's decoded frames and the official SDK's ``SessionMessage`` objects (mcp 2.x).

Inbound: the core has already checked the JSON-RPC envelope, so a ``Message`` becomes the matching
``JSONRPC*`` model by ``model_construct`` (no second validation), with ``model_fields_set`` equal to what
pydantic would record for the same frame: ``exclude_unset`` dumps then give back what was received.
The few envelopes the core accepts but the SDK's models do not (``params`` given as an array, a
non-object ``result``) are handed to the SDK's own validator, so the SDK sees the very exception its own
transport would produce. A ``FrameError`` becomes an ``InvalidFrameError`` (a ``ValueError``, as the SDK's
``ValidationError`` is), delivered in-band.

Outbound: models become plain dicts honouring ``exclude_unset`` and encoded by the core in one call per
batch; anything the core cannot encode (a pydantic model or a URL object nested in ``params``) falls back to
the SDK's ``model_dump_json`` for that one message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcp.shared.message import SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import BaseModel

from mcpframe import core
from mcpframe.errors import EncodeError

__all__ = ["InvalidFrameError", "encode_messages", "to_session_item"]

_ERROR_DATA_FIELDS = ("code", "message", "data")
_PLAIN_MODELS = (JSONRPCRequest, JSONRPCNotification, JSONRPCResponse, JSONRPCError, ErrorData)


class InvalidFrameError(ValueError):
    """A frame that is not a valid JSON-RPC message, delivered in-band on the read stream.

    ``code`` is ``-32700`` (parse error) or ``-32600`` (invalid request); ``id`` is the frame's id when
    it had a usable one; ``offset`` is the frame's position in the byte stream; ``preview`` its first
    bytes.
    """

    def __init__(self, code: int, message: str, *, id: int | str | None, offset: int, preview: bytes) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id
        self.offset = offset
        self.preview = preview

    @classmethod
    def from_frame_error(cls, error: Any) -> InvalidFrameError:
        """Build one from a core ``FrameError``."""
        return cls(error.code, error.message, id=error.id, offset=error.offset, preview=error.preview)


def _sdk_validate(raw: bytes) -> SessionMessage | Exception:
    """What the SDK's own transport makes of ``raw``: a message, or the exception it would deliver."""
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(raw, by_name=False))
    except ValueError as exc:
        return exc


def _request(message: Any) -> JSONRPCMessage | None:
    params = message.params
    if params is not None and type(params) is not dict:
        return None  # an array: the SDK's models reject it, let its validator say how
    fields = {"jsonrpc", "method"}
    if message.raw_params is not None:
        fields.add("params")
    if message.kind == "notification":
        return JSONRPCNotification.model_construct(
            fields, jsonrpc="2.0", method=message.method, params=params
        )
    fields.add("id")
    return JSONRPCRequest.model_construct(
        fields, jsonrpc="2.0", id=message.id, method=message.method, params=params
    )


def _response(message: Any) -> JSONRPCMessage | None:
    if message.kind == "result":
        result = message.result
        if type(result) is not dict:
            return None  # the SDK's JSONRPCResponse only takes an object
        fields = {"jsonrpc", "id", "result"}
        return JSONRPCResponse.model_construct(fields, jsonrpc="2.0", id=message.id, result=result)
    error = message.error
    data_fields = {name for name in _ERROR_DATA_FIELDS if name in error}
    error_data = ErrorData.model_construct(
        data_fields, code=error["code"], message=error["message"], data=error.get("data")
    )
    fields = {"jsonrpc", "id", "error"}
    return JSONRPCError.model_construct(fields, jsonrpc="2.0", id=message.id, error=error_data)


def to_session_item(item: Any) -> SessionMessage | Exception:
    """Turn one decoder output (``Message`` or ``FrameError``) into what the SDK's read stream carries."""
    if isinstance(item, core.FrameError):
        return InvalidFrameError.from_frame_error(item)
    model = _request(item) if item.method is not None else _response(item)
    if model is None:
        return _sdk_validate(item.raw)
    return SessionMessage(model)


def _plain(model: BaseModel) -> dict[str, Any]:
    """``model`` as a dict of its set fields, in declaration order (``exclude_unset`` semantics)."""
    fields_set = model.model_fields_set
    out: dict[str, Any] = {}
    for name in type(model).model_fields:
        if name in fields_set:
            value = getattr(model, name)
            out[name] = _plain(value) if isinstance(value, BaseModel) else value
    return out


def encode_message(message: BaseModel) -> bytes:
    """One NDJSON line for an SDK message model, as the SDK's transport would write it."""
    if type(message) in _PLAIN_MODELS:
        try:
            line: bytes = core.encode(_plain(message))
            return line
        except EncodeError:
            pass
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def encode_messages(messages: Iterable[SessionMessage]) -> bytes:
    """The NDJSON lines for ``messages``, concatenated (one write for a whole batch)."""
    return b"".join([encode_message(m.message) for m in messages])
