"""A listening proxy child's stdout, read by an asyncio protocol of its own.

asyncio's subprocess transport hands each pipe read to its protocol one loop turn later (`call_soon`), and
a reader task then wakes one turn after that: two loop turns per chunk before a frame reaches the bridge.
`ChildOutput` is connected to the child's stdout pipe directly, so a read is decoded where it lands: by
a `PipeReader`, which reads into one buffer kept for the pipe (asyncio's own pipe transport,
`loop.connect_read_pipe`, asks `os.read` for 256 KiB per read: an `mmap`, `mremap` and `munmap` each
time the few hundred bytes of an answer come). An answer the bridge can place at once (the fast path's,
`FastRoute`) is taken there by `take`, when nothing read before it still waits; every other frame is
queued, in order, for `frames()`, the async iterator the bridges read.

Flow control: reading the pipe stops once the queue holds `HIGH_WATER_BYTES` of frames or `HIGH_WATER`
frames (plus what one read completed), or that many bytes were read before `frames()` started; it starts
again once the reader brought it under both `LOW_WATER_BYTES` and `LOW_WATER`. So a bridge that waits for
a slow client holds its child back through the pipe, and one session queues about one frame past 256 KiB,
not 256 frames of up to `max_frame` each. (The decoder's partial frame is not counted: a frame must be
read whole before it can go anywhere, and it is bounded by `max_frame`.)
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import BinaryIO

from mcpframe import core

__all__ = [
    "HIGH_WATER",
    "HIGH_WATER_BYTES",
    "LOW_WATER",
    "LOW_WATER_BYTES",
    "READ_SIZE",
    "ChildOutput",
    "PipeReader",
]

logger = logging.getLogger("mcpframe.proxy")

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
        """Decode `data`; each frame completed goes to `take` when nothing waits before it, else to the
        queue, and the bytes of the frames completed are charged to the last one queued."""
        end = decoder.buffered + len(data)
        queue, charges, take = self._items, self._charges, self.take
        queued = False
        for item in decoder.feed(data):
            if take is not None and not queue and take(item):
                continue  # placed at once, and nothing read before it waits
            queue.append(item)
            charges.append(0)
            queued = True
        if queued:  # (only then is the size read: an answer taken at once is charged nothing)
            size = end - decoder.buffered  # the bytes of the frames completed
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


READ_SIZE = 64 * 1024
"""Bytes a `PipeReader` reads at most at once: what a pipe holds (Linux's default), so one read drains it."""


class PipeReader(asyncio.ReadTransport):
    """`protocol`'s transport of the read end `pipe`: read in the event loop's readiness callback
    (`loop.add_reader`) into one `READ_SIZE` buffer kept for the pipe, each read handed on as bytes. At the
    end of the pipe (or a read error) and on `close`, `protocol.connection_lost` is called one loop turn
    later, and the pipe is closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pipe: BinaryIO, protocol: asyncio.Protocol) -> None:
        super().__init__({"pipe": pipe})
        self._loop = loop
        self._pipe = pipe
        self._fd = pipe.fileno()
        self._protocol = protocol
        self._view = memoryview(bytearray(READ_SIZE))
        self._closing = False
        self._paused = False
        os.set_blocking(self._fd, False)
        loop.add_reader(self._fd, self._ready)  # first: a loop without it (Windows' Proactor) raises here
        protocol.connection_made(self)

    def _ready(self) -> None:
        try:
            size = os.readv(self._fd, (self._view,))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # the end, as asyncio's pipe transport takes it
            self._close(exc)
            return
        if not size:
            self._close(None)
            return
        try:
            self._protocol.data_received(self._view[:size].tobytes())
        except Exception as exc:  # as asyncio's transports: the protocol failed, reading ends
            logger.exception("reading an upstream child's output failed")
            if not self._closing:  # (it may have closed its transport before it raised)
                self._close(exc)

    def pause_reading(self) -> None:
        if not self._closing and not self._paused:
            self._paused = True
            self._loop.remove_reader(self._fd)

    def resume_reading(self) -> None:
        if not self._closing and self._paused:
            self._paused = False
            self._loop.add_reader(self._fd, self._ready)

    def is_reading(self) -> bool:
        return not (self._closing or self._paused)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._close(None)

    def _close(self, exc: Exception | None) -> None:
        self._closing = True
        self._loop.remove_reader(self._fd)
        self._loop.call_soon(self._lost, exc)

    def _lost(self, exc: Exception | None) -> None:
        try:
            self._protocol.connection_lost(exc)
        finally:
            self._pipe.close()
