"""Worker threads for synchronous handlers, cheaper per call than ``anyio.to_thread.run_sync``.

A sync tool, resource or prompt function (mcpframe's own, or an SDK server's under the compat engine) runs on
a worker thread so it never blocks the event loop. ``anyio.to_thread.run_sync`` costs about a hundred
microseconds per call (far more with many calls in flight); on asyncio this pool does the same job for
about half of that: the function runs with a copy of the caller's context variables, at most
``max_workers`` at once, and ``anyio.from_thread.run``/``run_sync`` work inside it as in an anyio worker.
A cancelled call stops being awaited; its thread finishes the function and the result is dropped, as with
``abandon_on_cancel=True``. Other event loops (trio) use anyio's own threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.lowlevel
import anyio.to_thread
import sniffio

try:  # where anyio's worker threads keep their event loop token (for anyio.from_thread)
    from anyio._core._eventloop import threadlocals as _anyio_locals
except ImportError:  # pragma: no cover - a future anyio moved it; from_thread then needs an explicit token
    _anyio_locals = threading.local()

__all__ = ["WorkerPool", "default_pool", "run_sync", "threaded"]

_Job = tuple["_Inbox", "asyncio.Future[Any]", contextvars.Context, Callable[[], Any]]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled meanwhile
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class _Inbox:
    """Results bound for one event loop: the first one of a batch wakes the loop, which settles them all."""

    __slots__ = ("_items", "_lock", "_loop", "_waking", "token")

    def __init__(self, loop: asyncio.AbstractEventLoop, token: object) -> None:
        self._loop = loop
        self.token = token
        self._items: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        self._lock = threading.Lock()
        self._waking = False

    def put(self, future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        with self._lock:
            self._items.append((future, result, error))
            if self._waking:
                return
            self._waking = True
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            items, self._items, self._waking = self._items, [], False
        for future, result, error in items:
            _settle(future, result, error)


def _run(job: _Job) -> None:
    inbox, future, context, fn = job
    _anyio_locals.current_token = inbox.token
    try:
        result = context.run(fn)
    except BaseException as exc:
        error: BaseException | None = exc
        result = None
    else:
        error = None
    finally:
        del _anyio_locals.current_token
    inbox.put(future, result, error)


class WorkerPool:
    """Up to ``max_workers`` daemon threads taking jobs from one queue, started as needed."""

    def __init__(self, max_workers: int = 40) -> None:
        self.max_workers = max_workers
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting on the queue, each owed one job
        self._backlog = 0  # jobs queued while every worker was busy and no more could start
        self._threads = 0
        self._inbox: tuple[asyncio.AbstractEventLoop, _Inbox] | None = None  # the last loop's inbox

    def _worker(self, first: _Job) -> None:
        job = first
        while True:
            _run(job)
            with self._lock:
                if self._backlog:
                    self._backlog -= 1  # stay busy: take a job nobody was owed
                else:
                    self._idle += 1
            job = self._jobs.get()

    def _loop_inbox(self, loop: asyncio.AbstractEventLoop) -> _Inbox:
        cached = self._inbox
        if cached is None or cached[0] is not loop:
            cached = self._inbox = (loop, _Inbox(loop, anyio.lowlevel.current_token()))
        return cached[1]

    async def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on a worker thread; its result (or exception) here. Call it on an asyncio loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job: _Job = (self._loop_inbox(loop), future, contextvars.copy_context(), fn)
        with self._lock:
            if self._idle:
                self._idle -= 1  # that worker takes it from the queue
                spawn = False
            else:
                spawn = self._threads < self.max_workers
                self._threads += spawn
                self._backlog += not spawn
        if spawn:
            threading.Thread(target=self._worker, args=(job,), daemon=True, name="mcpframe-worker").start()
        else:
            self._jobs.put(job)
        return await future


_DEFAULT: list[WorkerPool] = []
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool (40 threads at most, like anyio's default limiter), created on first use."""
    if not _DEFAULT:
        with _DEFAULT_LOCK:
            if not _DEFAULT:
                _DEFAULT.append(WorkerPool())
    return _DEFAULT[0]


async def run_sync(
    fn: Callable[[], Any], pool: WorkerPool | None = None, *, abandon_on_cancel: bool = True
) -> Any:
    """``fn()`` on a worker thread: ``pool`` (default: the shared one) on asyncio, else anyio's threads.

    The pool always abandons a cancelled call; ``abandon_on_cancel`` is for anyio's threads (trio).
    """
    if sniffio.current_async_library() == "asyncio":
        return await (pool or default_pool()).run(fn)
    return await anyio.to_thread.run_sync(fn, abandon_on_cancel=abandon_on_cancel)


def threaded(fn: Callable[..., Any], pool: WorkerPool | None = None) -> Callable[..., Awaitable[Any]]:
    """An async stand-in for the sync ``fn`` that runs it with ``run_sync`` on ``pool``.

    Off asyncio it waits for the function even when cancelled, as ``anyio.to_thread.run_sync`` does.
    """

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        return await run_sync(functools.partial(fn, *args, **kwargs), pool, abandon_on_cancel=False)

    return call
