"""`Pipe`: the byte queues between the HTTP side and the Sessions (bodies in, SSE events out), on asyncio.

Cheaper than anyio's memory object streams on the hot path (no checkpoint, no backend lookup per call); the
Sessions behind the HTTP server run on asyncio anyway.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque

__all__ = ["SSE_HIGH_WATER", "BoundedPipe", "ChunkReader", "MeteredPipe", "Pipe"]

SSE_HIGH_WATER = 64 * 1024
"""Bytes of events an SSE response's pipe (`MeteredPipe`) holds before their producers wait: about what the
lean server's socket buffer takes before its writer waits (asyncio's default write high-water mark)."""


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

    def nudge(self) -> None:
        """Wake the waiting reader with nothing new: its `get` returns `None`, as on a timeout."""
        self._wake()

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

    def room(self) -> asyncio.Future[None] | None:
        """A future done once a producer that can wait should put more (`None`: now). Never, here: a plain
        pipe is unbounded (its producers are bounded elsewhere, or put at most one chunk per request)."""
        return None


class CountedReader(ChunkReader):
    """A `ChunkReader` that counts the bytes it holds (`size`) against a `limit`, and the most it ever held
    (`peak`, what tests check): the bounded pipes' common part. How a producer waits for room below the
    limit is each subclass's (`MeteredPipe`: after it put; `BoundedPipe`: before)."""

    __slots__ = ("limit", "peak", "size")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1 byte, got {limit}")
        super().__init__()
        self.limit = limit
        self.size = 0
        self.peak = 0

    def put_now(self, data: bytes) -> bool:
        """Queue `data` at once, room or not; `False` (nothing queued) if the pipe is closed."""
        if self.closed:
            return False
        if data:
            self._items.append(data)
            self.size += len(data)
            self.peak = max(self.peak, self.size)
            self._wake()
        return True

    def get_nowait(self) -> bytes | None:
        """The next chunk, `b""` at the end, `None` when nothing is queued yet."""
        if self._items:
            chunk = self._items.popleft()
            self.size -= len(chunk)
            return chunk
        return b"" if self.closed else None


class MeteredPipe(Pipe, CountedReader):
    """A `Pipe` that counts the bytes it holds: past `limit` its producers are asked to wait (`room`).

    `put` itself never waits nor refuses (a frame already made is never dropped): a producer that can wait
    awaits `room()` after it put, so the pipe holds at most `limit` bytes plus one chunk per producer (and
    what is bounded elsewhere, put without waiting: `Stream.emit`'s responses, one per request). What
    an SSE response's stream is read from (`Stream.attach`), so a client that reads slowly holds back the
    handler that writes to it, not the server's memory. `close()` (the response ended, the client left)
    lets every waiting producer go on. `peak` is the most bytes it ever held (what tests check).
    """

    __slots__ = ("_rooms", "taken")

    def __init__(self, limit: int = SSE_HIGH_WATER) -> None:
        super().__init__(limit)
        self.taken = 0  # bytes its reader ever took (a producer tells a slow reader from one that stopped)
        # one future per waiting producer: one shared future would be cancelled for all of them by the
        # cancellation of any one (a task cancelled while it awaits a future cancels that future)
        self._rooms: list[asyncio.Future[None]] = []

    put = CountedReader.put_now  # a chunk, room or not (ahead of `Pipe.put`, which would not count it)

    def get_nowait(self) -> bytes | None:
        """The next chunk, `b""` at the end, `None` when nothing is queued yet."""
        items = self._items
        if not items:
            return b"" if self.closed else None
        chunk = items.popleft()
        self.size -= len(chunk)
        self.taken += len(chunk)
        if self._rooms and self.size < self.limit:
            self._free()
        return chunk

    def room(self) -> asyncio.Future[None] | None:
        """`None` while it holds less than `limit` bytes (or is closed), else a future done once it does."""
        if self.closed or self.size < self.limit:
            return None
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rooms.append(waiter)
        return waiter

    def clear(self) -> None:
        """Drop every chunk not yet taken (its reader will never get them); waiting producers go on."""
        self._items.clear()
        self.size = 0
        if self._rooms:
            self._free()

    def close(self) -> None:
        """No more chunks: the reader ends after those already queued, waiting producers go on."""
        super().close()
        if self._rooms:
            self._free()

    def _free(self) -> None:
        rooms, self._rooms = self._rooms, []
        for waiter in rooms:
            if not waiter.done():  # a producer cancelled while it waited left its future cancelled
                waiter.set_result(None)


class BoundedPipe(CountedReader):
    """A queue of non-empty byte chunks holding at most `limit` bytes, from any writers to one reader.

    `put` waits while the chunk would take the queue past `limit`; an empty queue takes any chunk, so one
    chunk longer than `limit` still passes (alone). `close()` ends it: waiting writers get `False`, the
    reader gets what was queued, then `b""`. `peak` is the most bytes it ever held (what tests check).
    `put_now` never waits: for what is bounded elsewhere (the client's answers to the session's own
    requests: at most one per request the session sent).
    """

    __slots__ = ("_writers",)

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self._writers: deque[asyncio.Event] = deque()  # writers waiting for room, first in line first

    def _fits(self, length: int) -> bool:
        return self.size == 0 or self.size + length <= self.limit

    async def put(self, chunk: bytes) -> bool:
        """Queue `chunk` once there is room for it; `False` (nothing queued) if the pipe is closed.

        Writers are served in the order they came (the order of a client's POSTs is kept): one that finds
        others waiting queues behind them even if its own chunk would fit.
        """
        await self.wait_room(len(chunk))
        return self.put_now(chunk)

    async def wait_room(self, length: int) -> None:
        """Until `length` bytes fit and no writer is ahead (or the pipe closed): what `put` waits for. The
        room is the caller's if it queues them (`put_now`, one chunk or several) before it awaits anything."""
        if self._writers or not self._fits(length):
            await self._wait_turn(length)

    async def _wait_turn(self, length: int) -> None:
        turn = asyncio.Event()
        self._writers.append(turn)
        try:
            while not self.closed and not (self._writers[0] is turn and self._fits(length)):
                turn.clear()
                await turn.wait()
        finally:
            self._writers.remove(turn)
            if self._writers:
                self._writers[0].set()  # the next in line looks for room once this chunk is queued

    def close(self) -> None:
        """No more chunks: the reader ends after those already queued, waiting writers get `False`."""
        if self.closed:
            return
        self.closed = True
        self._wake()
        for turn in self._writers:
            turn.set()

    def get_nowait(self) -> bytes | None:
        """The next chunk, `b""` at the end, `None` when nothing is queued yet."""
        chunk = CountedReader.get_nowait(self)  # (not `super()`: a super object per chunk costs more)
        if chunk and self._writers:
            self._writers[0].set()
        return chunk

    def drain_nowait(self) -> tuple[list[bytes], bool]:
        """Everything queued right now, and whether the end came with it."""
        chunks: list[bytes] = []
        while True:
            chunk = self.get_nowait()
            if chunk is None:
                return chunks, False
            if not chunk:
                return chunks, True
            chunks.append(chunk)
