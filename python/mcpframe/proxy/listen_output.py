"""A listening proxy child's stdout, read by an asyncio protocol of its own.

asyncio's subprocess transport hands each pipe read to its protocol one loop turn later (`call_soon`), and
a reader task then wakes one turn after that: two loop turns per chunk before a frame reaches the bridge.
`ChildOutput` is connected to the child's stdout pipe directly (`loop.connect_read_pipe`), so a read is
decoded where it lands. An answer the bridge can place at once (the fast path's, `FastRoute`) is taken
there by `take`, when nothing read before it still waits; every other frame is queued, in order, for
`frames()`, the async iterator the bridges read.

Flow control: reading the pipe stops once the queue holds `HIGH_WATER_BYTES` of frames or `HIGH_WATER`
frames (plus what one read completed), or that many bytes were read before `frames()` started; it starts
again once the reader brought it under both `LOW_WATER_BYTES` and `LOW_WATER`. So a bridge that waits for
a slow client holds its child back through the pipe, and one session queues about one frame past 256 KiB,
not 256 frames of up to `max_frame` each. (The decoder's partial frame is not counted: a frame must be
read whole before it can go anywhere, and it is bounded by `max_frame`.)
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable

from mcpframe import core

__all__ = ["HIGH_WATER", "HIGH_WATER_BYTES", "LOW_WATER", "LOW_WATER_BYTES", "ChildOutput"]

Item = core.Message | core.FrameError

HIGH_WATER = 256
"""Frames queued for the reader before the child's stdout is read no more."""
LOW_WATER = 64
"""... and under which reading starts again."""
HIGH_WATER_BYTES = 256 * 1024
"""Bytes of frames queued for the reader (or read before it started) before the stdout is read no more."""
LOW_WATER_BYTES = 64 * 1024
"""... and under which reading starts again."""


class ChildOutput(asyncio.Protocol):
    """The child's stdout (see the module doc): `take(frame) -> bool` may consume a frame at once."""

    def __init__(self) -> None:
        self.transport: asyncio.ReadTransport | None = None
        self.take: Callable[[Item], bool] | None = None
        self._decoder: core.Decoder | None = None  # made by `frames`, which knows the frame limit
        self._early: list[bytes] = []  # read before `frames` started
        self._early_bytes = 0
        self._items: deque[Item] = deque()
        # Bytes charged to each queued item, in step with `_items`: the bytes a read completed go to the
        # last item it queued (so also those of frames taken at once: an over-estimate, never an under-)
        self._charges: deque[int] = deque()
        self._bytes = 0  # the sum of `_charges`
        self._ended = False
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._decoder is None:
            self._early.append(data)
            self._early_bytes += len(data)
            self._pause(len(self._early) >= HIGH_WATER or self._early_bytes >= HIGH_WATER_BYTES)
            return
        self._feed(self._decoder, data)

    def eof_received(self) -> bool | None:
        return None  # the transport closes: `connection_lost` follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        if self._decoder is not None:
            self._end(self._decoder)
        self._wake()

    def _end(self, decoder: core.Decoder) -> None:
        """Queue what the decoder held (reading is over: nothing to charge)."""
        for item in decoder.close():
            self._items.append(item)
            self._charges.append(0)

    def _feed(self, decoder: core.Decoder, data: bytes) -> None:
        before = decoder.buffered
        items = decoder.feed(data)
        self._queue(items, before + len(data) - decoder.buffered)  # the bytes of the frames completed

    def _queue(self, items: Iterable[Item], size: int) -> None:
        queue, charges, take = self._items, self._charges, self.take
        queued = False
        for item in items:
            if take is not None and not queue and take(item):
                continue  # placed at once, and nothing read before it waits
            queue.append(item)
            charges.append(0)
            queued = True
        if queued:
            charges[-1] += size
            self._bytes += size
        if queue:
            self._wake()
            self._pause(len(queue) >= HIGH_WATER or self._bytes >= HIGH_WATER_BYTES)

    def _resume_if_low(self) -> None:
        if (
            self._paused
            and len(self._items) < LOW_WATER
            and self._bytes < LOW_WATER_BYTES
            and self.transport is not None
        ):
            self._paused = False
            self.transport.resume_reading()

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
        self._decoder = decoder = core.Decoder(max_frame=max_frame, lazy=True)
        early, self._early, self._early_bytes = self._early, [], 0
        for chunk in early:
            self._feed(decoder, chunk)
        if self._ended:  # it ended before anyone read it
            self._end(decoder)
        # Reading paused on early chunks that made too few frames must start again, or nothing (not
        # even the end) would ever come
        self._resume_if_low()
        loop = asyncio.get_running_loop()
        items, charges = self._items, self._charges
        while True:
            while items:
                item = items.popleft()
                self._bytes -= charges.popleft()
                yield item
                self._resume_if_low()
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
