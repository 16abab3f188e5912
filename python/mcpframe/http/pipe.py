"""`Pipe`: the byte queues between the HTTP side and the Sessions (bodies in, SSE events out), on asyncio.

Cheaper than anyio's memory object streams on the hot path (no checkpoint, no backend lookup per call); the
Sessions behind the HTTP server run on asyncio anyway.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque

__all__ = ["ChunkReader", "Pipe"]


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class ChunkReader:
    """The reading side shared by the HTTP host's byte queues: non-empty chunks in a deque, one reader that
    waits for the next (with a timeout), `b""` once the queue is closed and empty. Writers are the
    subclasses' (`Pipe`: unbounded; `legacy_pipe.BoundedPipe`: bounded in bytes)."""

    __slots__ = ("_items", "_waiter", "closed")

    def __init__(self) -> None:
        self._items: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def queued(self) -> int:
        """How many chunks wait for the reader (what a producer that can wait checks for flow control)."""
        return len(self._items)

    def get_nowait(self) -> bytes | None:
        """The next chunk, `b""` at the end, `None` when nothing is queued yet."""
        if self._items:
            return self._items.popleft()
        return b"" if self.closed else None

    async def get(self, timeout: float | None = None) -> bytes | None:
        """The next chunk, `b""` at the end; `None` if nothing came within `timeout` seconds."""
        chunk = self.get_nowait()
        if chunk is not None:
            return chunk
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        timer = None if timeout is None or timeout == math.inf else loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
        return self.get_nowait()


class Pipe(ChunkReader):
    """An unbounded queue of non-empty byte chunks, from any writer to one reader; `close()` ends it.

    The reader gets what was queued before the close, then `b""` (the end).
    """

    __slots__ = ()

    def put(self, data: bytes) -> bool:
        """Queue a chunk; `False` (and nothing queued) once the pipe is closed."""
        if self.closed:
            return False
        if data:
            self._items.append(data)
            self._wake()
        return True

    def close(self) -> None:
        """No more chunks: the reader ends after those already queued. Idempotent."""
        if not self.closed:
            self.closed = True
            self._wake()
