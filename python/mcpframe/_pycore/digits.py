"""The integer digit limit of the core contract, and exact integers independent of ``int_max_str_digits``.

An integer literal (no fraction, no exponent) of more than ``MAX_INT_DIGITS`` digits makes its frame or
batch element an Invalid Request, and such a value is never built: ``long_integers`` finds those
literals before anything is parsed, and ``with_stand_ins`` gives the text to parse instead, in which
each one reads ``0`` followed by spaces (same length, so every offset and the validity of the rest are
unchanged). Integers up to the limit are read and written exactly whatever
``sys.set_int_max_str_digits()`` says, through ``int(str)``/``repr(int)`` of at most 640 digits (the
smallest limit CPython lets one set) combined with integer arithmetic.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache
from typing import Final

from mcpframe.errors import EncodeError

__all__ = [
    "LONG_INTEGER",
    "MAX_INT_DIGITS",
    "any_in",
    "int_from_text",
    "int_to_text",
    "long_integers",
    "with_stand_ins",
]

MAX_INT_DIGITS: Final = 4300
LONG_INTEGER: Final = f"Invalid Request: integer literal longer than {MAX_INT_DIGITS} digits"
_ENCODE_LIMIT: Final = f"Integer exceeds the limit of {MAX_INT_DIGITS} digits"

# int(str) and repr(int) of at most this many digits work under any sys.set_int_max_str_digits().
_PIECE: Final = 640
_PIECE_BOUND: Final = 10**_PIECE
_INT_BOUND: Final = 10**MAX_INT_DIGITS

# A run of more than MAX_INT_DIGITS digits holds two consecutive multiples of _STEP and all between.
_STEP: Final = MAX_INT_DIGITS // 2
_DIGIT_MARKS: Final = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_DIGIT_RUN: Final = re.compile(rb"[0-9]*+")
_FLOAT_NEXT: Final = frozenset(b".eE")
_EXPONENT: Final = frozenset(b"eE")


@lru_cache(maxsize=64)
def _pow10(exponent: int) -> int:
    return int(10**exponent)


def int_from_text(text: str) -> int:
    """``int(text)`` for a JSON integer literal, whatever ``sys.get_int_max_str_digits()`` is.

    >>> int_from_text("-" + "9" * 4300) == -(10**4300 - 1)
    True
    """
    if text[0] == "-":
        return -int_from_text(text[1:])
    if len(text) <= _PIECE:
        return int(text)
    low_digits = len(text) // 2
    return int_from_text(text[:-low_digits]) * _pow10(low_digits) + int_from_text(text[-low_digits:])


def int_to_text(value: int) -> str:
    """``str(value)`` (``int`` subclasses give their integer value), whatever ``int_max_str_digits`` is.

    ``EncodeError`` beyond ``MAX_INT_DIGITS`` digits (one comparison decides it).

    >>> int_to_text(-(10**4299)) == "-1" + "0" * 4299
    True
    """
    value = int.__int__(value)
    if -_PIECE_BOUND < value < _PIECE_BOUND:
        return int.__repr__(value)
    if not -_INT_BOUND < value < _INT_BOUND:
        raise EncodeError(_ENCODE_LIMIT)
    if value < 0:
        return "-" + _big_text(-value)
    return _big_text(value)


def _big_text(value: int) -> str:
    if value < _PIECE_BOUND:
        return int.__repr__(value)
    low_digits = value.bit_length() * 3 // 20  # about half of the decimal digits
    high, low = divmod(value, _pow10(low_digits))
    return _big_text(high) + _big_text(low).rjust(low_digits, "0")


def long_integers(raw: bytes) -> list[tuple[int, int]]:
    """Where the integer literals of more than ``MAX_INT_DIGITS`` digits outside strings are: the
    ``(start, end)`` of their digits (sign excluded), in order.

    Exact on valid JSON; on invalid JSON whatever it finds leaves the text exactly as invalid once
    replaced (a stand-in is a number token of the same extent). Linear, and a few microseconds for a
    frame without a long run of digits.

    >>> long_integers(b'[1, "' + b"7" * 4301 + b'", -' + b"7" * 4301 + b"]")
    [(4310, 8611)]
    """
    runs = _long_runs(raw)
    if not runs:
        return []
    # Valid JSON has backslashes only in strings, each starting an escape: with the escaped ones
    # masked (same length), the quotes left are the string delimiters, so their parity says inside.
    masked = raw.replace(b"\\\\", b"__").replace(b'\\"', b"__") if b"\\" in raw else raw
    found = []
    quotes = position = 0
    for start, end in runs:
        quotes += masked.count(b'"', position, start)
        position = start
        if not quotes % 2 and _is_integer(raw, start, end):
            found.append((start, end))
    return found


def _long_runs(raw: bytes) -> list[tuple[int, int]]:
    """The runs of more than ``MAX_INT_DIGITS`` ASCII digits in ``raw`` (strings included), in order.

    Samples every ``_STEP``-th byte: a long run holds two consecutive sampled digits. Each such pair
    is measured forwards from the first one; the run started after the sample before it (or that
    pair would have come first), so only that stretch is looked at backwards.
    """
    if len(raw) <= MAX_INT_DIGITS:
        return []
    samples = raw[::_STEP].translate(_DIGIT_MARKS)
    runs = []
    k = samples.find(b"00")
    while k >= 0:
        at = k * _STEP
        end = _DIGIT_RUN.match(raw, at).end()  # type: ignore[union-attr]
        if end - at + _STEP > MAX_INT_DIGITS:
            window = max(at - _STEP + 1, 0)
            start = window + raw[window:at].translate(_DIGIT_MARKS).rfind(b" ") + 1
            if end - start > MAX_INT_DIGITS:
                runs.append((start, end))
        k = samples.find(b"00", -(-end // _STEP))
    return runs


def _is_integer(raw: bytes, start: int, end: int) -> bool:
    """Whether the digit run ``raw[start:end]`` (outside strings) is a whole integer literal."""
    before = raw[start - 1] if start else 0
    if before == 0x2D:  # "-": a sign, unless it is an exponent's
        before = raw[start - 2] if start > 1 else 0
        if before in _EXPONENT:
            return False
    elif before in b".eE+":
        return False
    # a leading zero ends a literal; a fraction or an exponent makes a float
    return raw[start] != 0x30 and (end == len(raw) or raw[end] not in _FLOAT_NEXT)


def with_stand_ins(raw: bytes, spans: list[tuple[int, int]]) -> bytes:
    """``raw`` with the digits at each of ``spans`` (from ``long_integers``) read as ``0`` and spaces."""
    pieces: list[bytes] = []
    position = 0
    for start, end in spans:
        pieces += (raw[position:start], b"0", b" " * (end - start - 1))
        position = end
    pieces.append(raw[position:])
    return b"".join(pieces)


def any_in(starts: list[int], start: int, end: int) -> bool:
    """Whether one of the sorted positions ``starts`` lies in ``[start, end)``."""
    k = bisect.bisect_left(starts, start)
    return k < len(starts) and starts[k] < end
