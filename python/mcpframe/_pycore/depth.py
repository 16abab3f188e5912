"""The nesting-depth rule of the core contract, measured on raw bytes (valid JSON or not).

Walk the bytes; inside a string (entered and left by an unescaped ``"``) a backslash skips the next
byte; outside strings ``[`` and ``{`` increase the depth, ``]`` and ``}`` decrease it (never below 0).
A frame fails when the depth exceeds ``MAX_DEPTH`` at any point.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DEPTH", "too_deep"]

MAX_DEPTH = 128

# A string as the depth rule sees it: from a quote to the next unescaped quote, or to the end of the
# input when it is never closed (a trailing lone backslash included). Possessive, so no backtracking.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPEN_BRACKETS = frozenset(b"[{")


def too_deep(raw: bytes) -> bool:
    """True when ``raw`` nests deeper than ``MAX_DEPTH`` by the contract's byte scan.

    >>> too_deep(b"[" * 128 + b"]" * 128), too_deep(b"[" * 129), too_deep(b'"' + b"[" * 200 + b'"')
    (False, True, False)
    """
    # At most MAX_DEPTH opening brackets anywhere (strings included) cannot exceed MAX_DEPTH.
    if len(raw) <= MAX_DEPTH or raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    return max_depth(raw) > MAX_DEPTH


def max_depth(raw: bytes) -> int:
    """The deepest nesting reached in ``raw`` by the contract's byte scan (exact, any length).

    >>> max_depth(b'{"a": [1, "]]", {"b": "["}]}'), max_depth(b"]]][[")
    (3, 2)
    """
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        if byte in _OPEN_BRACKETS:
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest
