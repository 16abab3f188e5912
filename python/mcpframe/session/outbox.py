"""The Session's write side: frames queued during one event-loop iteration go out with one write.

``put`` queues a frame and, once per loop iteration, schedules a flush with ``loop.call_soon``: everything
the handlers finished in that iteration is joined and handed to the transport together. ``flush_now`` is
the same flush done at once (the Session uses it when no other handler is running, so a lone answer is not
held back by an extra loop iteration), and ``put`` does it at every 128th queued frame, so a long dispatch
or many handlers finishing in one iteration do not hold the first answers back until the last one. A flush
first tries the transport's optional synchronous ``send_nowait(data) -> int`` (bytes taken); what it does
not take, or everything on a transport without it, goes to a writer task that awaits ``transport.send``.
While that task is writing, new frames queue behind it (their order is kept) and it sends them when it is
done.

Flow control: ``queued`` counts the bytes not yet taken by the transport (queued frames, and the write the
writer task is awaiting). Past ``high_water`` the outbox is ``full``, and stays so until the transport has
taken enough for ``queued`` to fall to ``low_water`` (a quarter of it); then ``on_drained`` is called. The
Session stops reading input while the outbox is full, so a peer that does not read our answers cannot
make us queue them without bound; a handler that had not started when the outbox filled waits in ``room()``
before it runs (the Session's handlers started as tasks of their own, which answer after the reader moved
on), so answers overshoot the mark by what the handlers already running add, not by every one admitted.

``largest`` is the size of the largest frame over ``large`` bytes put in the last ``FORGET_LARGEST``
seconds (``forget_largest`` drops an older one): the Session's estimate of what one running handler will
add, so it can start fewer handlers at once while answers are large (``SessionOptions.max_answer_bytes``,
``session/intake.py``). A smaller frame is not noted: the Session passes ``large`` such that handlers
answering no more could never pass the budget, so the common frame costs one comparison.

asyncio only (``loop.call_soon``, ``asyncio.Event``), like the rest of the Session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import anyio

from mcpframe.transports.base import Transport, TransportClosedError

__all__ = ["HIGH_WATER", "IO_ERRORS", "Outbox"]

logger = logging.getLogger("mcpframe.session")

_EARLY_FLUSH = 128  # answers queued in one go (a dispatch, a loop iteration) that are written without waiting
FORGET_LARGEST = 10.0  # seconds without a frame over ``large`` after which ``largest`` may be dropped

IO_ERRORS = (TransportClosedError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)

HIGH_WATER = 1024 * 1024
"""Default outbox high-water mark in bytes (``Session(outbox_high_water=...)``): past it, reading stops."""


class Outbox:
    """Coalesced, ordered writes to one transport; ``on_lost(exc)`` is called once if a write fails."""

    __slots__ = (
        "_frames",
        "_high",
        "_idle",
        "_large",
        "_largest_at",
        "_loop",
        "_lost",
        "_low",
        "_on_drained",
        "_on_lost",
        "_room",
        "_scheduled",
        "_send_nowait",
        "_sending",
        "_transport",
        "_wake",
        "full",
        "holding",
        "largest",
        "queued",
    )

    def __init__(
        self,
        transport: Transport,
        on_lost: Callable[[BaseException], None],
        on_drained: Callable[[], None],
        *,
        high_water: int = HIGH_WATER,
        large: int = 0,
    ) -> None:
        self._transport = transport
        self._send_nowait: Callable[[bytes], int] | None = getattr(transport, "send_nowait", None)
        self._on_lost = on_lost
        self._on_drained = on_drained
        self._high = high_water
        self._low = high_water // 4
        self.queued = 0  # bytes not yet taken by the transport
        self.full = False  # over the high-water mark, until queued falls to the low-water mark
        self.largest = 0  # the largest frame over ``large`` bytes put recently (module doc)
        self._large = large
        self._largest_at = 0.0  # the loop's time of the last frame over ``large`` bytes
        self._frames: list[bytes] = []
        self._scheduled = False
        self.holding = False  # the owner will call flush_now() itself: put() need not schedule a flush
        self._sending = False  # the writer task owns the transport until it has sent everything queued
        self._lost = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._room = asyncio.Event()  # set while not full: what ``room()`` waits on
        self._room.set()

    def __len__(self) -> int:
        return len(self._frames)

    @property
    def lost(self) -> bool:
        """Whether a write failed (the connection is gone)."""
        return self._lost

    def put(self, frame: bytes, *, last: bool = False) -> None:
        """Queue ``frame``; it is written at the end of this loop iteration at the latest (``last``: now,
        as nothing else will join this write: no flush is scheduled for a loop iteration later)."""
        frames = self._frames
        frames.append(frame)
        size = len(frame)
        self.queued += size
        if size > self._large:
            self._note_large(size)
        if self.queued > self._high and not self.full:
            self.full = True
            self._room.clear()
        if last or len(frames) >= _EARLY_FLUSH:
            # A long dispatch, or many handlers finishing in one loop iteration (tasks of their own): let
            # the peer start on the first answers rather than wait for the last one.
            self.flush_now()
            return
        if self.holding:
            return
        if not self._scheduled and not self._sending and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._scheduled_flush)

    def _note_large(self, size: int) -> None:
        loop = self._loop
        now = loop.time() if loop is not None else 0.0
        if size > self.largest or now - self._largest_at > FORGET_LARGEST:
            self.largest = size
        self._largest_at = now

    def forget_largest(self) -> bool:
        """Drop ``largest`` if no frame over ``large`` came for ``FORGET_LARGEST`` seconds; whether it was."""
        loop = self._loop
        if loop is None or loop.time() - self._largest_at <= FORGET_LARGEST:
            return False
        self.largest = 0
        return True

    def _scheduled_flush(self) -> None:
        self._scheduled = False
        self.flush_now()

    def flush_now(self) -> None:
        """Hand everything queued to the transport now (what it does not take goes to the writer task)."""
        frames = self._frames
        if self._sending or not frames or self._lost or self._loop is None:
            return
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        frames.clear()
        if self._send_nowait is not None:
            try:
                taken = self._send_nowait(data)
            except IO_ERRORS as exc:
                self._fail(exc)
                return
            if taken:
                self._taken(taken)
            if taken >= len(data):
                return
            data = data[taken:]
        frames.append(data)
        self._sending = True
        self._idle.clear()
        self._wake.set()

    @property
    def busy(self) -> bool:
        """Whether frames are queued or being written (``drain`` would wait, or hand them over)."""
        return bool(self._frames) or self._sending

    async def drain(self) -> None:
        """Wait until everything queued so far has been handed to the transport (or the write failed)."""
        self.flush_now()
        while self._sending and not self._lost:
            await self._idle.wait()

    async def room(self) -> None:
        """Wait until the outbox is not full (the transport took enough, a write failed, or it closed)."""
        while self.full:
            await self._room.wait()

    async def writer(self) -> None:
        """The writer task: sends what ``send_nowait`` could not; run it while the outbox is in use."""
        self._loop = asyncio.get_running_loop()
        if self._frames:
            self.flush_now()
        wake = self._wake
        while True:
            await wake.wait()
            wake.clear()
            while self._frames and not self._lost:
                frames, self._frames = self._frames, []
                data = frames[0] if len(frames) == 1 else b"".join(frames)
                try:
                    await self._transport.send(data)
                except IO_ERRORS as exc:
                    self._fail(exc)
                    return
                self._taken(len(data))
            self._sending = False
            self._idle.set()

    def _taken(self, size: int) -> None:
        """The transport took ``size`` bytes: below the low-water mark, a full outbox is drained."""
        self.queued -= size
        if self.full and self.queued <= self._low:
            self.full = False
            self._room.set()
            self._on_drained()

    def _fail(self, exc: BaseException) -> None:
        self._lost = True
        self._sending = False
        self._frames.clear()
        self.queued = 0
        self.full = False
        self._room.set()
        self._idle.set()
        self._on_lost(exc)

    def clear(self) -> None:
        """Drop what is queued and stop writing (the session is over)."""
        self._frames.clear()
        self.queued = 0
        self.full = False
        self._room.set()
        self._loop = None
        self._sending = False
        self._idle.set()
