"""`Deadlines`: many timeouts of one length on one loop timer (a POST's `stream_after`, an SSE keep-alive).

A `call_later` per wait, cancelled when what it waits for comes first (almost always), measured ~28k
instructions per call on the lean HTTP server (`loop.call_later` of `stream_after` per POST): the loop's
heap keeps each cancelled handle until it is due, and orders them with Python comparisons. Timeouts of one
length end in the order they start, so here they wait in a FIFO queue instead, and one timer, armed for the
oldest, fires each in time: an entry `[when, expire]` is cancelled by setting its `expire` to `None`, and
cancelled entries are dropped from the front as new ones come (and when the timer fires).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar

__all__ = ["Deadlines"]

logger = logging.getLogger("mcpframe.http")

_KEPT = 16  # lengths kept per loop (a server has two or three); more start over


class Deadlines:
    """The timeouts of `wait` seconds on `loop` (see the module doc); `Deadlines.of(wait)` is the running
    loop's."""

    __slots__ = ("_firing", "_queue", "_timer", "loop", "wait")

    # the last loop's, by length: read and replaced as one tuple (a loop runs in one thread, but two loops in
    # two threads must never share one)
    _cache: ClassVar[tuple[asyncio.AbstractEventLoop | None, dict[float, Deadlines]]] = (None, {})

    def __init__(self, loop: asyncio.AbstractEventLoop, wait: float) -> None:
        self.loop = loop
        self.wait = wait
        self._queue: deque[list[Any]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._firing = False  # inside `_fire`: it arms the timer once when done, `add` must not

    @classmethod
    def of(cls, wait: float, loop: asyncio.AbstractEventLoop | None = None) -> Deadlines:
        """The timeouts of `wait` seconds on `loop`, which must be the running one (`None`: asked for; a
        caller that knows it saves the lookup, which on 3.11 compares the process id: a system call)."""
        if loop is None:
            loop = asyncio.get_running_loop()
        cache = cls._cache
        if cache[0] is not loop:
            cache = cls._cache = (loop, {})
        found = cache[1].get(wait)
        if found is None:
            if len(cache[1]) >= _KEPT:
                cache[1].clear()
            found = cache[1][wait] = cls(loop, wait)
        return found

    def add(self, expire: Callable[[], None]) -> list[Any]:
        """Call `expire()` in `wait` seconds, unless the returned entry's `[1]` is set to `None` first.
        `expire` must not raise (what it raises is logged)."""
        queue = self._queue
        while queue and queue[0][1] is None:
            queue.popleft()
        entry: list[Any] = [self.loop.time() + self.wait, expire]
        queue.append(entry)
        if self._timer is None and not self._firing:
            self._timer = self.loop.call_at(entry[0], self._fire)
        return entry

    def _fire(self) -> None:
        # `add` from a callback must not arm a second timer (this one arms once at the end), and nothing a
        # callback raises may stop the others or leave entries waiting with no timer
        self._timer = None
        self._firing = True
        queue = self._queue
        try:
            now = self.loop.time()
            while queue and queue[0][0] <= now:
                expire = queue.popleft()[1]
                if expire is not None:
                    try:
                        expire()
                    except Exception:  # one failing must not keep the others waiting
                        logger.exception("a timeout's callback failed")
        finally:
            self._firing = False
            while queue and queue[0][1] is None:
                queue.popleft()
            if queue and self._timer is None:
                self._timer = self.loop.call_at(queue[0][0], self._fire)
