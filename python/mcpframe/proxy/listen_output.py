"""A listening proxy child's stdout, read by an asyncio protocol of its own.

asyncio's subprocess transport hands each pipe read to its protocol one loop turn later (`call_soon`), and
a reader task then wakes one turn after that: two loop turns per chunk before a frame reaches the bridge.
`ChildOutput` is connected to the child's stdout pipe directly (`loop.connect_read_pipe`), so a read is
decoded where it lands. An answer the bridge can place at once (the fast path's, `FastRoute`) is taken
there by `take`, when nothing read before it still waits; every other frame is queued, in order, for
`frames()`, the async iterator the bridges read.

Flow control: the queue holds at most `HIGH_WATER` frames (plus what one read carried) before reading
the pipe stops; it starts again once the reader brought it under `LOW_WATER`. So a bridge that waits for
a slow client still holds its child back through the pipe.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable

from mcpframe import core

__all__ = ["HIGH_WATER", "LOW_WATER", "ChildOutput"]

Item = core.Message | core.FrameError

HIGH_WATER = 256
"""Frames queued for the reader before the child's stdout is read no more."""
LOW_WATER = 64
"""... and under which reading starts again."""


class ChildOutput(asyncio.Protocol):
    """The child's stdout (see the module doc): `take(frame) -> bool` may consume a frame at once."""

    def __init__(self) -> None:
        self.transport: asyncio.ReadTransport | None = None
        self.take: Callable[[Item], bool] | None = None
        self._decoder: core.Decoder | None = None  # made by `frames`, which knows the frame limit
        self._early: list[bytes] = []  # read before `frames` started
        self._items: deque[Item] = deque()
        self._ended = False
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._decoder is None:
            self._early.append(data)
            self._pause(len(self._early) >= HIGH_WATER)
            return
        self._queue(self._decoder.feed(data))

    def eof_received(self) -> bool | None:
        return None  # the transport closes: `connection_lost` follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        if self._decoder is not None:
            self._items.extend(self._decoder.close())
        self._wake()

    def _queue(self, items: Iterable[Item]) -> None:
        queue, take = self._items, self.take
        for item in items:
            if take is not None and not queue and take(item):
                continue  # placed at once, and nothing read before it waits
            queue.append(item)
        if queue:
            self._wake()
            self._pause(len(queue) >= HIGH_WATER)

    def _pause(self, full: bool) -> None:
        if full and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def frames(self, *, max_frame: int) -> AsyncIterator[Item]:
        """Every frame not taken, in order, decoded lazily, until the child's stdout ends."""
        self._decoder = core.Decoder(max_frame=max_frame, lazy=True)
        early, self._early = self._early, []
        for chunk in early:
            self._queue(self._decoder.feed(chunk))
        if self._ended:  # it ended before anyone read it
            self._items.extend(self._decoder.close())
        loop = asyncio.get_running_loop()
        items = self._items
        while True:
            while items:
                yield items.popleft()
                if self._paused and len(items) < LOW_WATER and self.transport is not None:
                    self._paused = False
                    self.transport.resume_reading()
            if self._ended:
                return
            self._waiter = loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def close(self) -> None:
        """Stop reading (the child ended or is being ended)."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
