"""JSON text to Python values with the core contract's semantics (validation steps 1-3 of a frame).

The fast path is one ``msgspec.json`` decode per frame: it is strict where the contract is strict
(UTF-8, control characters, lone surrogate escapes, trailing commas, ``NaN``) and keeps integers
exact (up to ``sys.int_max_str_digits``: it refuses longer ones). Whatever it rejects goes to the
reference path, which is the definition: Python's ``json`` with ``NaN``/``Infinity`` rejected, exact
integers whatever ``int_max_str_digits`` says (literals beyond the contract's digit limit never get
here: see ``digits``), literals beyond the double range read as ``inf`` (``1e400``) and a check for
lone surrogates, which ``json`` would accept.
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

import msgspec

from mcpframe._pycore.depth import MAX_DEPTH, too_deep, too_deep_json
from mcpframe._pycore.digits import int_from_text

__all__ = [
    "DEPTH_ERROR",
    "INVALID_JSON",
    "InvalidFrame",
    "fast_decode",
    "parse",
    "parse_reference",
]

INVALID_JSON = "Parse error: invalid JSON"
DEPTH_ERROR = f"Parse error: nesting deeper than {MAX_DEPTH} levels"

fast_decode = msgspec.json.Decoder().decode
_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_HIGH, _LOW, _LOW_END = 0xD800, 0xDC00, 0xDFFF


class InvalidFrame(Exception):
    """A frame failed validation steps 1-3; ``args[0]`` is the contract's message."""


def parse(raw: bytes) -> Any:
    """Decode one frame's JSON, or raise ``InvalidFrame`` with the first failing rule's message.

    >>> parse(b'{"n": 123456789012345678901234567890, "f": 1e400}')
    {'n': 123456789012345678901234567890, 'f': inf}
    """
    try:
        value = fast_decode(raw)
    except Exception:
        return parse_reference(raw)
    if too_deep_json(raw):
        raise InvalidFrame(DEPTH_ERROR)
    return value


def parse_reference(raw: bytes) -> Any:
    """The definition of steps 1-3 (slow; ``parse`` tries ``msgspec`` first)."""
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
    if b"\\u" in raw and _has_lone_surrogate(raw):
        raise InvalidFrame(INVALID_JSON)
    return value


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _has_lone_surrogate(raw: bytes) -> bool:
    """Whether valid JSON text ``raw`` has a ``\\u`` escape of a lone surrogate (in any string or key).

    Checked on the text, not on the values: a duplicate key may have dropped the string.
    Every backslash of valid JSON starts an escape inside a string.
    """
    high_end = -1  # where a high surrogate escape ended, waiting for its low half
    for match in _ESCAPE.finditer(raw):
        digits = match.group(1)
        unit = int(digits, 16) if digits else -1
        if high_end >= 0:
            if match.start() != high_end or not _LOW <= unit <= _LOW_END:
                return True
            high_end = -1
        elif _HIGH <= unit < _LOW:
            high_end = match.end()
        elif _LOW <= unit <= _LOW_END:
            return True
    return high_end >= 0
