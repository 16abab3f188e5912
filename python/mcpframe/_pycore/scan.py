"""Byte spans of the top-level members of a JSON object and the elements of a JSON array.

Only used on bytes that already parsed as valid JSON, so the scanner can stay small: it walks the
structural tokens (strings are skipped whole) and tracks the nesting depth.
"""

from __future__ import annotations

import json
import re

__all__ = ["element_spans", "member_spans"]

_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[][{},:]', re.DOTALL)
_WS = b" \t\r\n"
_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")
_QUOTE = ord('"')
_COMMA = ord(",")
_COLON = ord(":")


def _rstrip(raw: bytes, start: int, end: int) -> int:
    while end > start and raw[end - 1] in _WS:
        end -= 1
    return end


def _lstrip(raw: bytes, start: int) -> int:
    while raw[start] in _WS:
        start += 1
    return start


def member_spans(raw: bytes) -> dict[str, tuple[int, int]]:
    """``{key: (start, end)}`` of each top-level member value of the object in ``raw`` (last key wins).

    >>> member_spans(b' {"id": 7 , "a":[1,{"id":2}]} '), member_spans(b"{ }")
    ({'id': (8, 9), 'a': (16, 28)}, {})
    """
    spans: dict[str, tuple[int, int]] = {}
    depth = 0
    key = ""
    start = -1
    for m in _TOKEN.finditer(raw):
        c = raw[m.start()]
        if depth == 1:
            if c == _QUOTE and start < 0:
                key = _key(m.group())
                continue
            if c == _COLON:
                start = _lstrip(raw, m.end())
                continue
            if start >= 0 and (c == _COMMA or c in _CLOSE):
                spans[key] = (start, _rstrip(raw, start, m.start()))
                start = -1
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
    return spans


def element_spans(raw: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of each element of the top-level array in ``raw``.

    >>> element_spans(b'[ {"a":[1,2]} ,"x,]" ]'), element_spans(b"[ ]")
    ([(2, 13), (15, 20)], [])
    """
    spans: list[tuple[int, int]] = []
    depth = 0
    start = -1
    for m in _TOKEN.finditer(raw):
        c = raw[m.start()]
        if depth == 1 and (c == _COMMA or c in _CLOSE):
            end = _rstrip(raw, start, m.start())
            if end > start:
                spans.append((start, end))
            if c == _COMMA:
                start = _lstrip(raw, m.end())
        elif depth == 0:
            start = _lstrip(raw, m.end())
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
    return spans


def _key(token: bytes) -> str:
    if b"\\" in token:
        key: str = json.loads(token)
        return key
    return token[1:-1].decode()
