"""The id of an upstream answer the proxy had to drop (an oversize or malformed frame), read from its first
bytes (`FrameError.preview`), so that the request it answers ends with an error instead of waiting.

Only the head most servers write is read: `{"jsonrpc": "2.0", "id": ID` (or `id` first), then `"result"` or
`"error"`; `ID` an integer of at most 18 digits or a string with no escapes. Anything else: `None` (the
request then waits, as before, until the upstream exits). `dropped_answer` is the error it ends with.
"""

from __future__ import annotations

import re

from mcpframe import core, jsonrpc
from mcpframe._api import Id

__all__ = ["answer_id", "dropped_answer"]

_ID = rb'(-?\d{1,18}|"[^"\\]{0,256}")'
_HEAD = re.compile(
    rb'\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*'
    + _ID
    + rb'|"id"\s*:\s*'
    + _ID
    + rb'\s*,\s*"jsonrpc"\s*:\s*"2\.0")'
    rb'\s*,\s*"(?:result|error)"'
)


def answer_id(preview: bytes) -> int | str | None:
    """The id of the answer whose frame starts with `preview`, when its head shows it plainly; else None."""
    found = _HEAD.match(preview)
    if found is None:
        return None
    raw = found.group(1) or found.group(2)
    if raw.startswith(b'"'):
        try:
            return raw[1:-1].decode("utf-8")
        except UnicodeDecodeError:
            return None
    return int(raw)


def dropped_answer(rid: Id | None, item: core.FrameError) -> bytes:
    """The error frame (with its LF) that ends request `rid`, whose answer `item` could not be read."""
    text = f"the upstream server's answer could not be read, and was dropped: {item.message}"
    return core.encode_error(rid, jsonrpc.INTERNAL_ERROR, text)
