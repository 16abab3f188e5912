"""JSON text to Python values with the core contract's semantics (validation steps 1-3 of a frame).

The fast path is one ``msgspec.json`` decode per frame: it is strict where the contract is strict
(UTF-8, control characters, lone surrogate escapes, trailing commas, ``NaN``) and keeps integers of
any size exact. Whatever it rejects goes to the reference path, which is the definition: Python's
``json`` with ``NaN``/``Infinity`` rejected, exact integers of any length, literals beyond the double
range read as ``inf`` (``1e400``) and a check for lone surrogates, which ``json`` would accept.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

import msgspec

from mcpframe._pycore.depth import MAX_DEPTH, too_deep

__all__ = ["DEPTH_ERROR", "INVALID_JSON", "InvalidFrame", "int_from_text", "int_to_text", "parse"]

INVALID_JSON = "Parse error: invalid JSON"
DEPTH_ERROR = f"Parse error: nesting deeper than {MAX_DEPTH} levels"

_fast_decode = msgspec.json.Decoder().decode

# int(str) and str(int) refuse more than sys.get_int_max_str_digits() digits (4300 by default).
_DIGITS_PER_STEP = 4000
_STEP_LIMIT = 10**_DIGITS_PER_STEP


def _pow10(exponent: int) -> int:
    return int(10**exponent)


class InvalidFrame(Exception):
    """A frame failed validation steps 1-3; ``args[0]`` is the contract's message."""


def parse(raw: bytes) -> Any:
    """Decode one frame's JSON, or raise ``InvalidFrame`` with the first failing rule's message.

    >>> parse(b'{"n": 123456789012345678901234567890, "f": 1e400}')
    {'n': 123456789012345678901234567890, 'f': inf}
    """
    try:
        value = _fast_decode(raw)
    except Exception:
        return _parse_reference(raw)
    if too_deep(raw):
        raise InvalidFrame(DEPTH_ERROR)
    return value


def _parse_reference(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidFrame(f"Parse error: invalid UTF-8 at byte {exc.start} of the frame") from None
    if too_deep(raw):
        raise InvalidFrame(DEPTH_ERROR)
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_int=int_from_text)
    except ValueError:
        raise InvalidFrame(INVALID_JSON) from None
    if b"\\u" in raw and _has_lone_surrogate(value):
        raise InvalidFrame(INVALID_JSON)
    return value


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _has_lone_surrogate(value: Any) -> bool:
    # json.loads joins valid surrogate pairs, so any surrogate left in a key or string is a lone one.
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def int_from_text(text: str) -> int:
    """``int(text)`` for a JSON integer of any length.

    >>> int_from_text("-" + "9" * 9000) == -(10**9000 - 1)
    True
    """
    if len(text) <= _DIGITS_PER_STEP:
        return int(text)
    if text[0] == "-":
        return -int_from_text(text[1:])
    low_digits = len(text) // 2
    high = int_from_text(text[:-low_digits])
    return high * _pow10(low_digits) + int_from_text(text[-low_digits:])


def int_to_text(value: int) -> str:
    """``str(value)`` for an integer of any size (``int`` subclasses give their integer value).

    >>> int_to_text(-(10**9000)) == "-1" + "0" * 9000
    True
    """
    value = int.__int__(value)
    if -_STEP_LIMIT < value < _STEP_LIMIT:
        return int.__repr__(value)
    if value < 0:
        return "-" + int_to_text(-value)
    low_digits = value.bit_length() * 3 // 20  # about half of the decimal digits
    high, low = divmod(value, _pow10(low_digits))
    return int_to_text(high) + int_to_text(low).rjust(low_digits, "0")
