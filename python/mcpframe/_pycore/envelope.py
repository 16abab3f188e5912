"""Validation and classification of one frame: JSON-RPC 2.0 envelopes and batches (contract steps 1-7)."""

from __future__ import annotations

import sys
from typing import Any

from mcpframe._pycore import guard, scan
from mcpframe._pycore.depth import MAX_DEPTH, too_deep_json
from mcpframe._pycore.digits import LONG_INTEGER, MAX_INT_DIGITS, any_in, long_integers, with_stand_ins
from mcpframe._pycore.message import FrameError, Message, MessageBuilder
from mcpframe._pycore.parse import DEPTH_ERROR, InvalidFrame, fast_decode, parse_reference

__all__ = ["INVALID_REQUEST", "PARSE_ERROR", "PREVIEW_BYTES", "decode_frame", "make_error"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
PREVIEW_BYTES = 64

_KINDS = frozenset(("request", "notification", "result", "error"))
_CALLS = frozenset(("request", "notification"))
_ID_TYPES = frozenset((int, str))
_PARAMS_TYPES = frozenset((dict, list))
# Shorter valid JSON cannot nest deeper than MAX_DEPTH (a level takes two brackets).
_DEEP_VALID_MIN = 2 * MAX_DEPTH + 1


NOT_AN_OBJECT = "Invalid Request: expected a JSON object"
EMPTY_BATCH = "Invalid Request: empty batch"
NO_BATCHES = "Invalid Request: batches are not supported"
_MISSING_JSONRPC = 'Invalid Request: missing "jsonrpc"'
_BAD_JSONRPC = 'Invalid Request: "jsonrpc" must be "2.0"'
_BAD_METHOD = 'Invalid Request: "method" must be a string'
_REQUEST_WITH_RESULT = 'Invalid Request: a request cannot have "result" or "error"'
_BAD_PARAMS = 'Invalid Request: "params" must be an object or an array'
_NULL_REQUEST_ID = "Invalid Request: request id must not be null"
_BAD_ID = 'Invalid Request: "id" must be a string or an integer'
_RESULT_AND_ERROR = 'Invalid Request: a response cannot have both "result" and "error"'
_NO_MEMBER = 'Invalid Request: missing "method", "result" or "error"'
_RESPONSE_WITHOUT_ID = 'Invalid Request: a response must have an "id"'
_NULL_RESULT_ID = 'Invalid Request: a result must have a non-null "id"'
_BAD_ERROR = 'Invalid Request: "error" must be an object'
_BAD_ERROR_CODE = 'Invalid Request: "error.code" must be an integer'
_BAD_ERROR_MESSAGE = 'Invalid Request: "error.message" must be a string'


def make_error(
    code: int,
    message: str,
    raw: bytes,
    offset: int,
    *,
    id: int | str | None = None,
    batch: int | None = None,
    notification: bool = False,
) -> FrameError:
    """A ``FrameError`` for the rejected bytes ``raw`` (its preview is their start)."""
    return FrameError(
        code,
        message,
        id=id,
        offset=offset,
        preview=raw[:PREVIEW_BYTES],
        batch=batch,
        notification=notification,
        raw=raw,
    )


def decode_frame(raw: bytes, offset: int, batches: bool, lazy: bool, out: list[Message | FrameError]) -> None:
    """Validate the frame ``raw`` (non-blank, size already checked) and append what it yields to ``out``.

    Whatever goes wrong while its values are built (``RecursionError``, ``MemoryError``, ...) costs
    this frame only: it becomes one internal-error ``FrameError`` (see ``guard``).
    """
    mark = len(out)
    try:
        long = _NONE
        try:
            # msgspec refuses a literal longer than int_max_str_digits before building it (CPython
            # counts the digits first): up to MAX_INT_DIGITS (the default), over-long literals are
            # looked for only when it fails; under a higher limit, before it runs
            if len(raw) > MAX_INT_DIGITS and not 0 < _int_max_str_digits() <= MAX_INT_DIGITS:
                raise _LookFirst
            value = fast_decode(raw)
            if len(raw) > _DEEP_VALID_MIN and too_deep_json(raw):
                raise InvalidFrame(DEPTH_ERROR)
        except _LookFirst:
            value, long = _parse(raw, tried=False)
        except Exception:
            value, long = _parse(raw, tried=True)
        if type(value) is dict:
            item = classify(value, raw, offset, None, lazy)
            out.append(_held_long(item, value, raw, 0, long) if long else item)
        elif type(value) is not list:
            out.append(_not_a_batch(value, raw, offset))
        elif not batches or not value:
            out.append(make_error(INVALID_REQUEST, NO_BATCHES if not batches else EMPTY_BATCH, raw, offset))
        else:
            _decode_batch(value, raw, offset, out, lazy=lazy, long=long)
    except Exception as exc:  # the guard: any failure of this frame's building, whatever it is
        del out[mark:]
        out.append(guard.internal_error(raw, offset, exc))


class _LookFirst(Exception):
    """The frame may hold over-long integer literals that msgspec would build: the careful path."""


_NONE: list[int] = []
_NO_SPANS: list[tuple[int, int]] = []
_int_max_str_digits = sys.get_int_max_str_digits


class _ParseError:
    """What ``_parse`` returns for a frame that fails steps 1-3 (no JSON value is one of these)."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def _not_a_batch(value: object, raw: bytes, offset: int) -> FrameError:
    """The error for a frame whose value is neither an object nor an array (or no JSON at all)."""
    if type(value) is _ParseError:
        return make_error(PARSE_ERROR, value.message, raw, offset)
    return make_error(INVALID_REQUEST, NOT_AN_OBJECT, raw, offset)


def _parse(raw: bytes, *, tried: bool) -> tuple[Any, list[int]]:
    """The careful path of a frame that ``msgspec`` alone did not decode (``tried``: it failed): its
    JSON value, or a ``_ParseError`` with the message of steps 1-3; and where its integer literals
    beyond the digit limit start (it is parsed with stand-ins for them: see ``digits``)."""
    spans = long_integers(raw) if len(raw) > MAX_INT_DIGITS else _NO_SPANS
    text = with_stand_ins(raw, spans) if spans else raw
    if spans or not tried:
        try:
            return _fast(text), _starts(spans)
        except Exception:
            pass
    # Anything unusual (invalid, too deep, 1e400, ...): the reference parser has the last word.
    return _reference(text), _starts(spans)


def _starts(spans: list[tuple[int, int]]) -> list[int]:
    return [start for start, _ in spans] if spans else _NONE


def _fast(text: bytes) -> Any:
    """``msgspec``'s value of ``text``; any exception when it is not simply valid and shallow enough."""
    value = fast_decode(text)
    if len(text) > _DEEP_VALID_MIN and too_deep_json(text):
        raise InvalidFrame(DEPTH_ERROR)
    return value


def _reference(text: bytes) -> Any:
    """The reference parser's value of ``text`` (the last word), or a ``_ParseError``."""
    try:
        return parse_reference(text)
    except InvalidFrame as exc:
        return _ParseError(exc.args[0])


def _decode_batch(
    items: list[Any], raw: bytes, offset: int, out: list[Message | FrameError], *, lazy: bool, long: list[int]
) -> None:
    for index, (item, (start, end)) in enumerate(zip(items, scan.element_spans(raw), strict=True)):
        element = raw[start:end]
        if type(item) is not dict:
            out.append(make_error(INVALID_REQUEST, NOT_AN_OBJECT, element, offset + start, batch=index))
            continue
        result = classify(item, element, offset + start, index, lazy)
        out.append(_held_long(result, item, element, start, long) if any_in(long, start, end) else result)


def _held_long(
    item: Message | FrameError, obj: dict[str, Any], raw: bytes, start: int, long: list[int]
) -> Message | FrameError:
    """``item`` for an object (``raw``, at ``start`` in its frame) that held an integer literal beyond
    the digit limit (``long``: where they start in the frame), parsed with stand-ins for them: a
    message becomes the digit-limit error; an envelope error stays, and neither has an id that was
    one of those literals (its stand-in is no value)."""
    if not any_in(long, start, start + len(raw)):
        return item
    ident = obj.get("id")
    if ident == 0 and type(ident) is int:  # a stand-in reads 0: was the id one of them?
        id_start, id_end = scan.member_spans(raw)["id"]
        if any_in(long, start + id_start, start + id_end):
            ident = None
    if isinstance(item, Message):
        notification = item.kind == "notification"
        message = LONG_INTEGER
    else:
        notification = False
        message = item.message
    return make_error(
        INVALID_REQUEST,
        message,
        raw,
        item.offset,
        id=ident if type(ident) in _ID_TYPES else None,
        batch=item.batch,
        notification=notification,
    )


def classify(
    obj: dict[str, Any], raw: bytes, offset: int, batch: int | None, lazy: bool
) -> Message | FrameError:
    """The ``Message`` for the envelope ``obj`` (parsed from ``raw``), or the ``FrameError`` of step 5."""
    kind = _check(obj)
    get = obj.get
    if kind not in _KINDS:
        ident = get("id")
        return make_error(
            INVALID_REQUEST,
            kind,
            raw,
            offset,
            id=ident if type(ident) in _ID_TYPES else None,
            batch=batch,
        )
    # A valid envelope has no "method" unless it is a call, and no "result"/"error" unless it is that
    # kind of response, so plain lookups give the right None for the other attributes.
    m = MessageBuilder()
    m.kind = kind  # type: ignore[assignment]
    m.id = get("id")
    m.method = get("method")
    m.params = get("params") if kind in _CALLS else None
    m.result = get("result")
    m.error = get("error")
    m.raw = raw
    m.offset = offset
    m.batch = batch
    m.lazy = lazy
    m._spans = None
    m.__class__ = Message  # type: ignore[assignment]
    return m  # type: ignore[return-value]


def _check(obj: dict[str, Any]) -> str:
    """The message kind, or the message of the first failing step-5 rule."""
    if obj.get("jsonrpc") != "2.0":
        return _BAD_JSONRPC if "jsonrpc" in obj else _MISSING_JSONRPC
    return _check_call(obj) if "method" in obj else _check_response(obj)


def _check_call(obj: dict[str, Any]) -> str:
    if type(obj["method"]) is not str:
        return _BAD_METHOD
    if "result" in obj or "error" in obj:
        return _REQUEST_WITH_RESULT
    if "params" in obj and type(obj["params"]) not in _PARAMS_TYPES:
        return _BAD_PARAMS
    if "id" not in obj:
        return "notification"
    ident = obj["id"]
    if type(ident) in _ID_TYPES:
        return "request"
    return _NULL_REQUEST_ID if ident is None else _BAD_ID


def _check_response(obj: dict[str, Any]) -> str:
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result and has_error:
        return _RESULT_AND_ERROR
    if not has_result and not has_error:
        return _NO_MEMBER
    if "id" not in obj:
        return _RESPONSE_WITHOUT_ID
    ident = obj["id"]
    if ident is not None and type(ident) not in _ID_TYPES:
        return _BAD_ID
    if has_result:
        return "result" if ident is not None else _NULL_RESULT_ID
    return _check_error_object(obj["error"])


def _check_error_object(error: object) -> str:
    if type(error) is not dict:
        return _BAD_ERROR
    if type(error.get("code")) is not int:
        return _BAD_ERROR_CODE
    if type(error.get("message")) is not str:
        return _BAD_ERROR_MESSAGE
    return "error"
