"""JSON-RPC encoders: one compact NDJSON line per message (see ``docs/core-contract.md``).

``_encode_reference`` is the definition of the value encoding. ``orjson`` is the fast path, used only
for values made of the exact built-in types (``orjson`` would also accept ``Enum``, ``UUID``,
``datetime``, dataclasses, ... which the contract rejects); whatever ``orjson`` refuses (integers
beyond 64 bits, surrogates, non-str keys, too deep) is re-encoded by the reference encoder, which
either writes it exactly or raises the contract's ``EncodeError``.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Iterable
from typing import Any, Final

import orjson

from mcpframe._pycore.digits import int_to_text
from mcpframe.errors import EncodeError

__all__ = [
    "encode",
    "encode_error",
    "encode_id",
    "encode_many",
    "encode_notification",
    "encode_request",
    "encode_result",
]

# Containers nested inside one encoded value (orjson's own limit: 254 passes, 255 fails).
MAX_ENCODE_DEPTH: Final = 254

# Integers that ``b"%d"`` writes without reaching the int-to-str digit limit.
_SMALL_INT_MAX = 10**18
_SMALL_INT_MIN = -_SMALL_INT_MAX

_SCALARS = frozenset((str, int, float, bool, type(None)))
_PLAIN_TYPES = _SCALARS | {dict, list, tuple}
_ID_TYPES = frozenset((int, str))
_referents = gc.get_referents
_orjson_dumps = orjson.dumps
_JSONEncodeError = orjson.JSONEncodeError
_NEWLINE = orjson.OPT_APPEND_NEWLINE
_SURROGATES = "str is not valid UTF-8: surrogates not allowed"


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


def _plain(value: Any) -> bool:
    """True when ``value`` is built only of exact dict/list/tuple/str/int/float/bool/None.

    Level by level: ``gc.get_referents`` gives the keys and values of exact dicts and the items of
    exact lists and tuples (scalars have none), so each level is checked by C loops. More than
    ``MAX_ENCODE_DEPTH`` levels of containers (or a cycle) is not plain either: the reference encoder
    then raises the recursion error.
    """
    level = [value]
    for _ in range(MAX_ENCODE_DEPTH):
        if not _PLAIN_TYPES.issuperset(map(type, level)):
            return False
        level = _referents(*level)
        if not level:
            return True
    # Whatever sits below the deepest allowed container must be a scalar: even an empty container
    # there is one level too many (orjson would let an empty tuple through; the contract does not).
    return _SCALARS.issuperset(map(type, level))


def dumps(value: Any, option: int = 0) -> bytes:
    """The compact JSON bytes of ``value`` (``EncodeError`` when it cannot be encoded)."""
    if type(value) in _SCALARS or _plain(value):
        try:
            return _orjson_dumps(value, option=option)
        except _JSONEncodeError:
            pass
    out: list[bytes] = []
    _encode_reference(value, 0, out)
    if option:
        out.append(b"\n")
    return b"".join(out)


def _encode_reference(value: Any, depth: int, out: list[bytes]) -> None:
    if value is None or value is True or value is False:
        out.append(b"null" if value is None else b"true" if value else b"false")
    elif isinstance(value, str):
        out.append(_encode_str(value))
    elif isinstance(value, int):
        out.append(int_to_text(value).encode())
    elif isinstance(value, float):
        out.append(_encode_float(value))
    elif isinstance(value, dict | list | tuple):
        if depth >= MAX_ENCODE_DEPTH:
            raise EncodeError("Recursion limit reached")
        if isinstance(value, dict):
            _encode_dict(value, depth + 1, out)
        else:
            _encode_list(value, depth + 1, out)
    else:
        raise EncodeError(f"Type is not JSON serializable: {type(value).__name__}")


def _encode_str(value: str) -> bytes:
    try:
        # json escapes exactly '"', '\\' and U+0000..U+001F (\b \f \n \r \t, else lowercase \u00XX).
        return json.dumps(str.__str__(value), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise EncodeError(_SURROGATES) from None


def _encode_float(value: float) -> bytes:
    if not math.isfinite(value):
        return b"null"
    return float.__repr__(value).encode()


def _encode_dict(value: dict[Any, Any], depth: int, out: list[bytes]) -> None:
    out.append(b"{")
    first = True
    # Storage order, as the native walker and orjson write it (a subclass's own items() is not called).
    for key, item in dict.items(value):
        if not isinstance(key, str):
            raise EncodeError("Dict key must be str")
        if not first:
            out.append(b",")
        first = False
        out.append(_encode_str(key))
        out.append(b":")
        _encode_reference(item, depth, out)
    out.append(b"}")


def _encode_list(value: list[Any] | tuple[Any, ...], depth: int, out: list[bytes]) -> None:
    out.append(b"[")
    for index, item in enumerate(value):
        if index:
            out.append(b",")
        _encode_reference(item, depth, out)
    out.append(b"]")


def encode_id(value: object) -> bytes:
    """The JSON text of a request id (``TypeError`` unless it is an int or a str; bools are refused)."""
    if type(value) is int and _SMALL_INT_MIN < value < _SMALL_INT_MAX:
        return b"%d" % value
    if isinstance(value, str):
        return dumps(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int_to_text(value).encode()
    raise TypeError(f"id must be an int or a str, not {type(value).__name__}")


def _check_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")


def _whole(envelope: dict[str, Any]) -> bytes | None:
    """``orjson`` on a whole envelope whose parts are checked plain; ``None`` if it refuses (too deep,
    integers beyond 64 bits, surrogates): then the envelope is written piece by piece."""
    try:
        return _orjson_dumps(envelope, option=_NEWLINE)
    except _JSONEncodeError:
        return None


def encode_request(id: int | str, method: str, params: Any = None, /) -> bytes:
    """``{"jsonrpc":"2.0","id":...,"method":...,"params":...}`` + LF (``params`` omitted when None)."""
    if type(id) in _ID_TYPES and type(method) is str and _plain(params):
        envelope = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            envelope["params"] = params
        line = _whole(envelope)
        if line is not None:
            return line
    # Each argument is checked and written before the next is looked at (the contract's order).
    head = encode_id(id)
    _check_str("method", method)
    if params is None:
        return b'{"jsonrpc":"2.0","id":%b,"method":%b}\n' % (head, dumps(method))
    return b'{"jsonrpc":"2.0","id":%b,"method":%b,"params":%b}\n' % (head, dumps(method), dumps(params))


def encode_notification(method: str, params: Any = None, /) -> bytes:
    """``{"jsonrpc":"2.0","method":...,"params":...}`` + LF (``params`` omitted when None)."""
    if type(method) is str and _plain(params):
        envelope = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            envelope["params"] = params
        line = _whole(envelope)
        if line is not None:
            return line
    _check_str("method", method)
    if params is None:
        return b'{"jsonrpc":"2.0","method":%b}\n' % dumps(method)
    return b'{"jsonrpc":"2.0","method":%b,"params":%b}\n' % (dumps(method), dumps(params))


def encode_result(id: int | str, result: Any, /) -> bytes:
    """``{"jsonrpc":"2.0","id":...,"result":...}`` + LF."""
    if type(id) in _ID_TYPES and _plain(result):
        line = _whole({"jsonrpc": "2.0", "id": id, "result": result})
        if line is not None:
            return line
    return b'{"jsonrpc":"2.0","id":%b,"result":%b}\n' % (encode_id(id), dumps(result))


def encode_error(id: int | str | None, code: int, message: str, /, data: Any = MISSING) -> bytes:
    """``{"jsonrpc":"2.0","id":...,"error":{"code":...,"message":...,"data":...}}`` + LF."""
    if (id is None or type(id) in _ID_TYPES) and type(code) is int and type(message) is str:
        error = {"code": code, "message": message}
        if data is MISSING or _plain(data):
            if data is not MISSING:
                error["data"] = data
            line = _whole({"jsonrpc": "2.0", "id": id, "error": error})
            if line is not None:
                return line
    # Each argument is checked and written before the next is looked at (the contract's order).
    head = b"null" if id is None else encode_id(id)
    if not isinstance(code, int) or isinstance(code, bool):
        raise TypeError(f"code must be an int, not {type(code).__name__}")
    code_text = dumps(code)
    _check_str("message", message)
    error_text = b'{"code":%b,"message":%b' % (code_text, dumps(message))
    if data is not MISSING:
        error_text += b',"data":%b' % dumps(data)
    return b'{"jsonrpc":"2.0","id":%b,"error":%b}}\n' % (head, error_text)


def encode(message: Any, /) -> bytes:
    """Any JSON value, as-is, as one compact line."""
    return dumps(message, _NEWLINE)


def encode_many(messages: Iterable[Any], /) -> bytes:
    """The concatenation of ``encode(m)`` for each message."""
    return b"".join([dumps(message, _NEWLINE) for message in messages])
