"""The byte queues of a legacy HTTP+SSE session (2024-11-05): bounded both ways, so a slow side waits.

A legacy session has one Session and two queues: POST bodies in (`LegacyTransport.feed`), SSE events out
(read by the GET `/sse` response). Both are bounded in bytes, and a full queue makes its writer wait
instead of growing: a client that stops reading its stream stops the session's writes, then (through the
Session's own outbox bound) its handlers and its reading; a client that posts faster than the session
reads waits for its `202`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable

from mcpframe.transports.base import TransportClosedError

from .pipe import ChunkReader
from .streams import format_event

__all__ = ["BoundedPipe", "LegacyTransport"]


class BoundedPipe(ChunkReader):
    """A queue of non-empty byte chunks holding at most `limit` bytes, from any writers to one reader.

    `put` waits while the chunk would take the queue past `limit`; an empty queue takes any chunk, so one
    chunk longer than `limit` still passes (alone). `close()` ends it: waiting writers get `False`, the
    reader gets what was queued, then `b""`. `peak` is the most bytes it ever held (what tests check).
    """

    __slots__ = ("_writers", "limit", "peak", "size")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1 byte, got {limit}")
        super().__init__()
        self.limit = limit
        self.size = 0
        self.peak = 0
        self._writers: deque[asyncio.Event] = deque()  # writers waiting for room, first in line first

    def _fits(self, length: int) -> bool:
        return self.size == 0 or self.size + length <= self.limit

    async def put(self, chunk: bytes) -> bool:
        """Queue `chunk` once there is room for it; `False` (nothing queued) if the pipe is closed.

        Writers are served in the order they came (the order of a client's POSTs is kept): one that finds
        others waiting queues behind them even if its own chunk would fit.
        """
        if self._writers or not self._fits(len(chunk)):
            await self._wait_turn(len(chunk))
        if self.closed:
            return False
        if chunk:
            self._items.append(chunk)
            self.size += len(chunk)
            self.peak = max(self.peak, self.size)
            self._wake()
        return True

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
        chunk = super().get_nowait()
        if chunk:
            self.size -= len(chunk)
            if self._writers:
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


class LegacyTransport:
    """The Session's pipe in a legacy SSE session: POSTed frames in, SSE `message` events out.

    `inbound` holds at most `max_body` bytes of posted frames (one body always fits, since no body is
    longer); `outbound` holds at most `max_events` bytes of formatted events, the same bound as the
    Session's outbox, so what a stalled reader costs is two outbox bounds per session.
    """

    def __init__(self, *, max_body: int, max_events: int) -> None:
        self.inbound = BoundedPipe(max_body)
        self.outbound = BoundedPipe(max_events)

    async def feed(self, frames: bytes) -> bool:
        """Queue posted NDJSON frames for the Session (waits for room); `False` once the session ended."""
        return await self.inbound.put(frames)

    def end_input(self) -> None:
        """No more POSTs: the Session reads its end of input and finishes what runs (a shutdown)."""
        self.inbound.close()

    async def receive(self) -> bytes:
        """The next posted frames; `b""` once the session ends."""
        chunk = await self.inbound.get()
        return chunk or b""

    async def send(self, data: bytes) -> None:
        """Each frame as one SSE `message` event, queued for the stream (waits while it is full).

        The Session hands over what its outbox joined (up to its mark and more), so the events are queued
        in pieces of at most the queue's bound: the queue never holds more, unless one event is longer.
        """
        outbound = self.outbound
        if b"\n" not in data.rstrip(b"\n"):
            pieces = [format_event(data)]
        else:
            pieces = _pieces((format_event(f) for f in data.split(b"\n") if f), outbound.limit)
        for piece in pieces:
            if not await outbound.put(piece):
                raise TransportClosedError("the SSE stream of this session is closed")

    async def aclose(self) -> None:
        """Idempotent: the stream ends after the events already queued."""
        self.inbound.close()
        self.outbound.close()


def _pieces(events: Iterable[bytes], limit: int) -> list[bytes]:
    """The events joined into as few pieces as fit in `limit` bytes each (an event is never cut)."""
    pieces: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for event in events:
        if current and size + len(event) > limit:
            pieces.append(b"".join(current))
            current, size = [], 0
        current.append(event)
        size += len(event)
    if current:
        pieces.append(b"".join(current))
    return pieces
