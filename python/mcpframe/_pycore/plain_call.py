"""`plain_call`: the listening proxy's read of a POST body that is one plain request
(`docs/core-contract.md`, "plain_call"). The contract's reference, built on this backend's `decode` and
`value_span`; the native one reads the same in one call without building a message."""

from __future__ import annotations

from mcpframe._pycore.framing import decode
from mcpframe._pycore.message import FrameError
from mcpframe._pycore.span import value_span
from mcpframe.protocol import INITIALIZE, PROGRESS_TOKEN

__all__ = ["plain_call"]

_BOM = b"\xef\xbb\xbf"
_TOKEN_PATH = ("params", "_meta", PROGRESS_TOKEN)


def plain_call(body: bytes, max_frame: int, /) -> tuple[int | str, str, bytes] | None:
    """`(id, method, line)` of `body` when it is one plain call, else `None`: within `max_frame` bytes, no
    BOM, one valid JSON-RPC request (not a batch) whose method is not `initialize`, whose id is written
    as its encoding writes it (no escape, not `-0`), and that names no
    `params._meta.progressToken`; `line` is `body` as one NDJSON line (trailing whitespace dropped, each CR
    and LF inside made a space, one LF added)."""
    if not isinstance(body, bytes):
        raise TypeError(f"body must be bytes, not {type(body).__name__}")
    if len(body) > max_frame or body.startswith(_BOM):
        return None
    items = decode(body, max_frame=max_frame, batches=True, lazy=True)
    if len(items) != 1 or isinstance(items[0], FrameError):
        return None
    message = items[0]
    rid, method, raw_id = message.id, message.method, message.raw_id
    if message.kind != "request" or message.batch is not None or method is None or method == INITIALIZE:
        return None
    if rid is None or raw_id is None or raw_id.startswith(b"-0") or b"\\" in raw_id:
        return None  # (an id written unlike its encoding)
    if value_span(body, _TOKEN_PATH) is not None:
        return None
    line = body.rstrip(b" \t\r\n").replace(b"\r", b" ").replace(b"\n", b" ")
    return rid, method, line + b"\n"
