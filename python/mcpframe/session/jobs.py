"""``Jobs``: a Session's notification handlers and progress callbacks, run one at a time in arrival order.

The reader only queues a job (``put``); one worker task (``worker``) takes them in order and runs each to
its end, so a slow notification handler holds back the next notification, never the reading. The Intake
bounds how many wait (``queued``: reading pauses at its limit), and the Session asks ``queued`` before
starting a request eagerly: a notification that came first is handled first.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["Jobs"]

logger = logging.getLogger("mcpframe.session")

_Job = tuple[Callable[..., Any], tuple[Any, ...]]


class Jobs:
    """The queue of jobs and the worker that runs them; ``on_taken()`` after the worker takes each one."""

    __slots__ = ("_done", "_in", "_on_taken", "_out", "queued")

    def __init__(self, *, on_taken: Callable[[], None]) -> None:
        self.queued = 0
        """Jobs not yet taken by the worker."""
        self._on_taken = on_taken
        self._done: anyio.Event | None = None
        self._in: MemoryObjectSendStream[_Job]
        self._out: MemoryObjectReceiveStream[_Job]
        self._in, self._out = anyio.create_memory_object_stream[_Job](math.inf)

    def waiting(self) -> int:
        """``queued``, for who takes a callable (the Intake bounds the jobs too)."""
        return self.queued

    def put(self, func: Callable[..., Any], *args: Any) -> bool:
        """Queue ``func(*args)``; ``False`` (and a warning) when it was dropped: the session is closing."""
        try:
            self._in.send_nowait((func, args))
            self.queued += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.WouldBlock):
            logger.warning("dropped a notification for its handler: the session is closing")
            return False
        return True

    def start(self) -> None:
        """Call on the event loop before ``worker`` runs (what ``finished`` waits on is made here)."""
        self._done = anyio.Event()

    async def worker(self) -> None:
        """Run the jobs, one at a time, in arrival order, until the input is closed (or this is cancelled)."""
        try:
            async for func, args in self._out:
                self.queued -= 1
                self._on_taken()
                try:
                    outcome = func(*args)
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:
                    logger.exception("notification handler failed")
        finally:
            assert self._done is not None
            self._done.set()

    async def finish(self) -> None:
        """No more jobs: wait until the worker has run every queued one."""
        self._in.close()
        assert self._done is not None
        await self._done.wait()

    def close(self) -> None:
        """Drop whatever is still queued; nothing more can be queued."""
        self._in.close()
        self._out.close()
