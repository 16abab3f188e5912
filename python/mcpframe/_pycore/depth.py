"""The nesting-depth rule of the core contract, measured on raw bytes (valid JSON or not).

Walk the bytes; inside a string (entered and left by an unescaped ``"``) a backslash skips the next
byte; outside strings ``[`` and ``{`` increase the depth, ``]`` and ``}`` decrease it (never below 0).
A frame fails when the depth exceeds ``MAX_DEPTH`` at any point.
"""

from __future__ import annotations

import re
from array import array
from itertools import accumulate

__all__ = ["MAX_DEPTH", "max_depth", "too_deep", "too_deep_json"]

MAX_DEPTH = 128

# A string as the depth rule sees it: from a quote to the next unescaped quote, or to the end of the
# input when it is never closed (a trailing lone backslash included). Possessive, so no backtracking.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_QUOTES_OR_BRACKETS = bytes(b for b in range(256) if b not in b'"[]{}')
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 / -1 as signed bytes


def too_deep(raw: bytes) -> bool:
    """True when ``raw`` (any bytes) nests deeper than ``MAX_DEPTH`` by the contract's byte scan.

    >>> too_deep(b"[" * 128 + b"]" * 128), too_deep(b"[" * 129), too_deep(b'"' + b"[" * 200 + b'"')
    (False, True, False)
    """
    # At most MAX_DEPTH opening brackets anywhere (strings included) cannot exceed MAX_DEPTH.
    if len(raw) <= MAX_DEPTH or raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    return max_depth(raw) > MAX_DEPTH


def too_deep_json(raw: bytes) -> bool:
    """``too_deep`` for bytes known to be valid JSON (faster on big frames, same answer).

    >>> too_deep_json(b'["\\\\\\\\", "\\\\"[", ' + b"[" * 127 + b"]" * 128)
    False
    """
    # Each level of valid JSON takes an opening and a closing bracket.
    if len(raw) <= 2 * MAX_DEPTH + 1 or raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    # Valid JSON has backslashes only inside strings, each starting an escape: dropping escaped
    # backslashes, then escaped quotes, leaves strings as plain "..." runs. Of those only the quotes
    # and brackets matter, and splitting at the quotes puts what is outside strings at even indexes.
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = unescaped.translate(None, _NOT_QUOTES_OR_BRACKETS)
    return _deepest(b"".join(structure.split(b'"')[::2])) > MAX_DEPTH


def max_depth(raw: bytes) -> int:
    """The deepest nesting reached in ``raw`` by the contract's byte scan (exact, any bytes).

    >>> max_depth(b'{"a": [1, "]]", {"b": "["}]}'), max_depth(b"]]][["), max_depth(b'["x')
    (3, 2, 1)
    """
    return _deepest(_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS))


def _deepest(brackets: bytes) -> int:
    """The deepest level of a sequence of brackets, the depth never going below 0."""
    if not brackets:
        return 0
    levels = list(accumulate(array("b", brackets.translate(_STEPS))))
    if min(levels) >= 0:
        return max(levels)
    depth = deepest = 0  # some closing bracket came first: count with the floor at 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest
