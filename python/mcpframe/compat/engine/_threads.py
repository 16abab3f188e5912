"""Worker threads for the SDK's synchronous tools, cheaper per call than ``anyio.to_thread.run_sync``.

The SDK runs a sync tool function on a worker thread (``anyio.to_thread.run_sync``), which costs about a
hundred microseconds per call and far more when many calls are in flight. While the engine serves on
asyncio it gives each sync ``MCPServer`` tool an async stand-in that hands the call to this pool: the
function still runs on a worker thread (never on the event loop), with a copy of the caller's context
variables, at most ``max_workers`` at once. A cancelled call stops being awaited; its thread finishes
the function and the result is dropped, as with ``abandon_on_cancel``.
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

import anyio.to_thread
import sniffio

__all__ = ["WorkerPool", "threaded"]

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, Callable[[], Any]]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled meanwhile
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


def _run(job: _Job) -> None:
    loop, future, context, fn = job
    try:
        result = context.run(fn)
    except BaseException as exc:
        error: BaseException | None = exc
        result = None
    else:
        error = None
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
        loop.call_soon_threadsafe(_settle, future, result, error)


class WorkerPool:
    """Up to ``max_workers`` daemon threads taking jobs from one queue, started as needed."""

    def __init__(self, max_workers: int = 40) -> None:
        self.max_workers = max_workers
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting on the queue, each owed one job
        self._backlog = 0  # jobs queued while every worker was busy and no more could start
        self._threads = 0

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

    async def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on a worker thread; its result (or exception) here."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job: _Job = (loop, future, contextvars.copy_context(), fn)
        with self._lock:
            if self._idle:
                self._idle -= 1  # that worker takes it from the queue
                spawn = False
            else:
                spawn = self._threads < self.max_workers
                self._threads += spawn
                self._backlog += not spawn
        if spawn:
            threading.Thread(target=self._worker, args=(job,), daemon=True, name="mcpframe-tool").start()
        else:
            self._jobs.put(job)
        return await future


def threaded(fn: Callable[..., Any], pool: WorkerPool) -> Callable[..., Awaitable[Any]]:
    """An async stand-in for the sync ``fn`` that runs it on ``pool`` (anyio's threads off asyncio)."""

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        bound = functools.partial(fn, *args, **kwargs)
        if sniffio.current_async_library() == "asyncio":
            return await pool.run(bound)
        return await anyio.to_thread.run_sync(bound)

    return call
