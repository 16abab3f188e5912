"""``splice_id``: rewrite the top-level ``id`` of a raw frame without re-encoding anything else."""

from __future__ import annotations

from mcpframe._pycore.encode import encode_id
from mcpframe._pycore.framing import decode
from mcpframe._pycore.message import Message

__all__ = ["splice_id"]


def splice_id(frame: bytes, new_id: int | str, /) -> bytes:
    """``frame`` with its top-level ``id`` value replaced by ``new_id``, like ``Message.with_id``.

    >>> splice_id(b'{"jsonrpc":"2.0", "id" : 7,"method":"x"}', "a-1")
    b'{"jsonrpc":"2.0", "id" : "a-1","method":"x"}'
    """
    encode_id(new_id)  # wrong id types are a TypeError before anything else
    if not isinstance(frame, bytes | bytearray | memoryview):
        raise TypeError(f"frame must be bytes, not {type(frame).__name__}")
    items = decode(frame, max_frame=max(len(frame), 1), batches=False)
    if len(items) != 1 or not isinstance(items[0], Message):
        raise ValueError("frame is not a valid JSON-RPC message")
    return items[0].with_id(new_id)
