"""The guard of one frame: whatever goes wrong while a frame's values are built costs that frame only.

A ``RecursionError`` (the JSON parsers recurse through nested values), a ``MemoryError`` or any other
exception raised while one frame is decoded becomes one ``FrameError`` -32603 for that frame, and the
decoder goes on with the next one. Its id and notification flag are read from the frame's top-level
members by a scan that builds no nested value (the frame's parse is what failed).
"""

from __future__ import annotations

import json
import re
from typing import Final

from mcpframe._pycore import scan
from mcpframe._pycore.digits import MAX_INT_DIGITS, int_from_text
from mcpframe._pycore.message import FrameError

__all__ = ["INTERNAL_ERROR", "internal_error"]

INTERNAL_ERROR: Final = -32603
_PREVIEW_BYTES: Final = 64
_WS: Final = b" \t\r\n"
_INTEGER: Final = re.compile(rb"-?(?:0|[1-9][0-9]*)\Z")


def internal_error(raw: bytes, offset: int, exc: BaseException) -> FrameError:
    """The ``FrameError`` that stands for the frame ``raw`` (at ``offset``) whose decoding raised ``exc``."""
    ident, notification = _readable(raw)
    return FrameError(
        INTERNAL_ERROR,
        f"Internal error: decoding the frame failed ({type(exc).__name__})",
        id=ident,
        offset=offset,
        preview=raw[:_PREVIEW_BYTES],
        notification=notification,
        raw=raw,
    )


def _readable(raw: bytes) -> tuple[int | str | None, bool]:
    """The top-level id of an object frame (a string, or an integer within the digit limit), and
    whether its members make a valid notification; ``(None, False)`` when that cannot be read."""
    if raw.lstrip(_WS)[:1] != b"{":
        return None, False
    try:
        spans = scan.member_spans(raw)
        members = {name: raw[start:end] for name, (start, end) in spans.items()}
        ident = _scalar(members.get("id"))
        notification = (
            "id" not in members
            and "result" not in members
            and "error" not in members
            and _scalar(members.get("jsonrpc")) == "2.0"
            and type(_scalar(members.get("method"))) is str
            and members.get("params", b"{")[:1] in (b"{", b"[")
        )
    except Exception:  # nothing readable: the frame may be anything
        return None, False
    return (ident if isinstance(ident, int | str) else None), notification


def _scalar(text: bytes | None) -> object:
    """The string or integer (within the digit limit) that ``text`` spells, else ``None``."""
    if text is None:
        return None
    if text[:1] == b'"':
        value: object = json.loads(text)
        return value
    if _INTEGER.match(text) and len(text.lstrip(b"-")) <= MAX_INT_DIGITS:
        return int_from_text(text.decode())
    return None
