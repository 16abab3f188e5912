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
from contextvars import ContextVar
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["IN_JOB", "Jobs"]

logger = logging.getLogger("mcpframe.session")

_Job = tuple[Callable[..., Any], tuple[Any, ...], bool]  # (func, args, a notification handler's)

IN_JOB: ContextVar[bool] = ContextVar("mcpframe_in_job", default=False)
"""True inside a job (and in tasks it starts): a request sent from there must not have its answer queued
behind the jobs (outgoing.py: Order), which would wait for the job that waits for it."""


class Jobs:
    """The queue of jobs and the worker that runs them; ``on_taken()`` after the worker takes each one."""

    __slots__ = ("_done", "_in", "_on_taken", "_out", "notices", "queued")

    def __init__(self, *, on_taken: Callable[[], None]) -> None:
        self.queued = 0
        """Jobs not yet taken by the worker."""
        self.notices = 0
        """Of those, the notification handlers' (``put_notice``): a response waits behind them."""
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
        return self._put((func, args, False))

    def put_notice(self, func: Callable[..., Any], *args: Any) -> bool:
        """Queue a notification handler's ``func(*args)``, counted in ``notices`` until it is taken."""
        if not self._put((func, args, True)):
            return False
        self.notices += 1
        return True

    def waiting_notices(self) -> int:
        """``notices``, for who takes a callable."""
        return self.notices

    def _put(self, job: _Job) -> bool:
        try:
            self._in.send_nowait(job)
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
            async for func, args, notice in self._out:
                self.queued -= 1
                if notice:
                    self.notices -= 1
                self._on_taken()
                token = IN_JOB.set(True)
                try:
                    outcome = func(*args)
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:
                    logger.exception("notification handler failed")
                finally:
                    IN_JOB.reset(token)
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
