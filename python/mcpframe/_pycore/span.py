"""``value_span``: where a value sits in a raw message, found by a key path (for byte splices)."""

from __future__ import annotations

from collections.abc import Sequence

from mcpframe._pycore.framing import decode
from mcpframe._pycore.message import Message
from mcpframe._pycore.scan import member_spans

__all__ = ["value_span"]

_BOM = b"\xef\xbb\xbf"
_WS = b" \t\r\n"


def value_span(frame: bytes, path: Sequence[str], /) -> tuple[int, int] | None:
    """The ``(start, end)`` byte span in ``frame`` of the value at the key ``path``, or ``None``.

    ``frame`` holds one valid message (else ``ValueError``, as for ``splice_id``); a leading BOM is
    counted in the offsets. ``None`` when a key is missing or a value on the way is not an object;
    of duplicate keys the last one wins, as in the decoded message.

    >>> frame = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken": "t"}}}'
    >>> value_span(frame, ("params", "_meta", "progressToken"))
    (73, 76)
    """
    if not isinstance(frame, bytes):
        raise TypeError(f"frame must be bytes, not {type(frame).__name__}")
    keys = _keys(path)
    items = decode(frame, max_frame=max(len(frame), 1), batches=False)
    if len(items) != 1 or not isinstance(items[0], Message):
        raise ValueError("frame is not a valid JSON-RPC message")
    start = len(_BOM) if frame.startswith(_BOM) else 0
    end = len(frame)
    for key in keys:
        while frame[start] in _WS:
            start += 1
        while frame[end - 1] in _WS:
            end -= 1
        if frame[start] != ord("{"):
            return None
        span = member_spans(frame[start:end]).get(key)
        if span is None:
            return None
        start, end = start + span[0], start + span[1]
    return start, end


def _keys(path: Sequence[str]) -> list[str]:
    if isinstance(path, str):
        raise TypeError("path must be a sequence of str, not a str")
    if not isinstance(path, Sequence):
        raise TypeError("path must be a sequence of str")
    keys = list(path)
    if not all(isinstance(key, str) for key in keys):
        raise TypeError("path must be a sequence of str")
    if not keys:
        raise ValueError("path must not be empty")
    return keys
