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
from typing import Any, Protocol, TypeVar

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
_FIELD_ORDER: dict[type[BaseModel], tuple[str, ...]] = {cls: tuple(cls.model_fields) for cls in _PLAIN_MODELS}
_FRAME_ERROR: type = core.FrameError
_M = TypeVar("_M", bound=BaseModel)
_new = object.__new__
_set = object.__setattr__


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


def _model_construct(cls: type[_M], fields_set: set[str], values: dict[str, Any]) -> _M:
    """``cls.model_construct(fields_set, **values)`` for ``values`` that name every field."""
    return cls.model_construct(fields_set, **values)


def _slot_construct(cls: type[_M], fields_set: set[str], values: dict[str, Any]) -> _M:
    """What ``model_construct`` does for these plain models (every field given, no extras, no private
    attributes), minus its generic bookkeeping: about three times faster."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


class _Constructor(Protocol):
    def __call__(self, cls: type[_M], fields_set: set[str], values: dict[str, Any], /) -> _M: ...


def _pick_constructor() -> _Constructor:
    """``_slot_construct`` when it builds exactly what ``model_construct`` builds in this pydantic."""
    values = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": None}
    fast = _slot_construct(JSONRPCRequest, {"jsonrpc", "id", "method"}, dict(values))
    slow = _model_construct(JSONRPCRequest, {"jsonrpc", "id", "method"}, dict(values))
    slots = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    same = all(getattr(fast, name) == getattr(slow, name) for name in slots)
    return _slot_construct if same and fast.model_dump_json() == slow.model_dump_json() else _model_construct


_construct = _pick_constructor()


def _request(message: Any) -> JSONRPCMessage | None:
    params = message.params
    if params is None:  # absent: the core rejects "params": null
        fields = {"jsonrpc", "method"}
    elif type(params) is dict:
        fields = {"jsonrpc", "method", "params"}
    else:
        return None  # an array: the SDK's models reject it, let its validator say how
    if message.kind == "notification":
        values = {"jsonrpc": "2.0", "method": message.method, "params": params}
        return _construct(JSONRPCNotification, fields, values)
    fields.add("id")
    values = {"jsonrpc": "2.0", "id": message.id, "method": message.method, "params": params}
    return _construct(JSONRPCRequest, fields, values)


def _response(message: Any) -> JSONRPCMessage | None:
    if message.kind == "result":
        result = message.result
        if type(result) is not dict:
            return None  # the SDK's JSONRPCResponse only takes an object
        values = {"jsonrpc": "2.0", "id": message.id, "result": result}
        return _construct(JSONRPCResponse, {"jsonrpc", "id", "result"}, values)
    error = message.error
    data_fields = {name for name in _ERROR_DATA_FIELDS if name in error}
    error_values = {"code": error["code"], "message": error["message"], "data": error.get("data")}
    values = {"jsonrpc": "2.0", "id": message.id, "error": _construct(ErrorData, data_fields, error_values)}
    return _construct(JSONRPCError, {"jsonrpc", "id", "error"}, values)


def to_session_item(item: Any) -> SessionMessage | Exception:
    """Turn one decoder output (``Message`` or ``FrameError``) into what the SDK's read stream carries."""
    if type(item) is _FRAME_ERROR:
        return InvalidFrameError.from_frame_error(item)
    model = _request(item) if item.method is not None else _response(item)
    if model is None:
        return _sdk_validate(item.raw)
    return SessionMessage(model)


def _plain(model: BaseModel) -> dict[str, Any]:
    """One of the plain models as a dict of its set fields in declaration order (``exclude_unset``)."""
    fields_set = model.__pydantic_fields_set__
    values = model.__dict__
    out = {name: values[name] for name in _FIELD_ORDER[type(model)] if name in fields_set}
    error = out.get("error")
    if type(error) is ErrorData:
        out["error"] = _plain(error)
    return out


def encode_message(message: BaseModel) -> bytes:
    """One NDJSON line for an SDK message model, as the SDK's transport would write it."""
    if type(message) in _FIELD_ORDER:
        try:
            line: bytes = core.encode(_plain(message))
            return line
        except EncodeError:
            pass  # something only pydantic knows how to write (a model or a URL inside params)
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def encode_messages(messages: Iterable[SessionMessage]) -> bytes:
    """The NDJSON lines for ``messages``, concatenated (one write for a whole batch)."""
    models = [m.message for m in messages]
    if all(type(model) in _FIELD_ORDER for model in models):
        try:
            data: bytes = core.encode_many([_plain(model) for model in models])
            return data
        except EncodeError:
            pass
    return b"".join([encode_message(model) for model in models])
