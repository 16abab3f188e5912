"""Worker threads for synchronous handlers, cheaper per call than ``anyio.to_thread.run_sync``.

A sync tool, resource or prompt function (mcpframe's own, or an SDK server's under the compat engine) runs on
a worker thread so it never blocks the event loop. ``anyio.to_thread.run_sync`` costs about a hundred
microseconds per call (far more with many calls in flight); on asyncio this pool does the same job for
a fraction of that: the function runs with a copy of the caller's context variables, at most
``max_workers`` at once, and ``anyio.from_thread.run``/``run_sync`` work inside it as in an anyio worker.
A cancelled call stops being awaited; its thread finishes the function and the result is dropped, as with
``abandon_on_cancel=True``. Other event loops (trio) use anyio's own threads.

Results come back to their event loop in batches: the first result of a batch wakes the loop, which then
settles every result that arrived and resumes each waiting task directly (not a loop iteration later).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio.lowlevel
import anyio.to_thread
import sniffio

try:  # where anyio's worker threads keep their event loop token (for anyio.from_thread)
    from anyio._core._eventloop import threadlocals as _anyio_locals
except ImportError:  # pragma: no cover - a future anyio moved it; from_thread then needs an explicit token
    _anyio_locals = threading.local()

__all__ = ["WorkerPool", "call_sync", "default_pool", "run_sync", "threaded"]

_running_loop = asyncio._get_running_loop
_NO_KWARGS: dict[str, Any] = {}


class _Waiter(asyncio.Future[Any]):
    """One call: its job (what a worker runs), its outcome, and the future its caller awaits.

    A plain future schedules its callbacks (the awaiting task's wake-up) for the next loop iteration; this
    one keeps the first callback aside and the inbox runs it directly when it settles the batch. Cancelling
    it schedules that callback as usual, and any further callbacks are an ordinary future's. The job rides
    on the future itself (no tuple per call: fewer objects for the cyclic GC while thousands are in flight).
    ``WorkerPool.start`` makes them and sets ``_wake``; a worker sets ``_value`` and ``_error``.
    """

    __slots__ = (
        "_args",
        "_context",
        "_error",
        "_fn",
        "_inbox",
        "_kwargs",
        "_value",
        "_wake",
        "_wake_context",
    )
    _wake: Callable[[Any], object] | None
    _wake_context: contextvars.Context
    _inbox: _Inbox
    _context: contextvars.Context
    _fn: Callable[..., Any]
    _args: tuple[Any, ...]
    _kwargs: dict[str, Any]
    _value: Any
    _error: BaseException | None

    def add_done_callback(
        self, fn: Callable[[Any], object], *, context: contextvars.Context | None = None
    ) -> None:
        if self._wake is None and not self.done():
            self._wake = fn
            self._wake_context = contextvars.copy_context() if context is None else context
        else:
            super().add_done_callback(fn, context=context)

    def remove_done_callback(self, fn: Callable[[Any], object]) -> int:
        removed = super().remove_done_callback(fn)
        if self._wake is not None and self._wake == fn:
            self._wake = None
            removed += 1
        return removed

    def cancel(self, msg: Any | None = None) -> bool:
        if not super().cancel(msg):
            return False
        wake = self._wake
        if wake is not None:  # scheduled, as a plain future schedules its callbacks
            self._wake = None
            self.get_loop().call_soon(wake, self, context=self._wake_context)
        return True


class _Inbox:
    """Calls done for one event loop: the first one of a batch wakes the loop, which settles them all."""

    __slots__ = ("_items", "_lock", "_loop", "_waking", "token")

    def __init__(self, loop: asyncio.AbstractEventLoop, token: object) -> None:
        self._loop = loop
        self.token = token
        self._items: list[_Waiter] = []
        self._lock = threading.Lock()
        self._waking = False

    def put(self, call: _Waiter) -> None:
        with self._lock:
            self._items.append(call)
            if self._waking:
                return
            self._waking = True
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            items, self._items, self._waking = self._items, [], False
        pending: Iterator[_Waiter] = iter(items)
        try:
            for call in pending:
                if call.done():  # cancelled meanwhile: the result is dropped
                    continue
                error = call._error
                if error is None:
                    call.set_result(call._value)
                else:
                    call._error = None
                    call.set_exception(error)
                wake = call._wake
                if wake is not None:  # the awaiting task: resume it now
                    call._wake = None
                    call._wake_context.run(wake, call)
        except BaseException:  # a resumed task let KeyboardInterrupt/SystemExit out: settle the rest later
            self._requeue(list(pending))
            raise

    def _requeue(self, rest: list[_Waiter]) -> None:
        if not rest:
            return
        with self._lock:
            self._items[:0] = rest
            if not self._waking:
                self._waking = True
                self._loop.call_soon(self._drain)


def _run(call: _Waiter) -> None:
    inbox = call._inbox
    _anyio_locals.current_token = inbox.token
    try:
        call._value = call._context.run(call._fn, *call._args, **call._kwargs)
        call._error = None
    except BaseException as exc:
        call._value = None
        call._error = exc
    finally:
        del _anyio_locals.current_token
    inbox.put(call)


class WorkerPool:
    """Up to ``max_workers`` daemon threads taking jobs from one queue, started as needed."""

    def __init__(self, max_workers: int = 40) -> None:
        self.max_workers = max_workers
        self._jobs: queue.SimpleQueue[_Waiter] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting on the queue, each owed one job
        self._backlog = 0  # jobs queued while every worker was busy and no more could start
        self._threads = 0
        self._inbox: tuple[asyncio.AbstractEventLoop, _Inbox] | None = None  # the last loop's inbox

    def _worker(self, first: _Waiter) -> None:
        job = first
        while True:
            _run(job)
            with self._lock:
                if self._backlog:
                    self._backlog -= 1  # stay busy: take a job nobody was owed
                else:
                    self._idle += 1
            job = self._jobs.get()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        """Start ``fn(*args, **kwargs)`` on a worker thread; await the returned future for its outcome.

        Call it on a running asyncio loop, in a task, and await the future in that same task at once.
        """
        future = self.start(fn, args, kwargs)
        if not isinstance(future, asyncio.Future):  # pragma: no cover - asyncio only, as documented
            future.close()  # type: ignore[attr-defined]
            raise RuntimeError("WorkerPool.submit() needs a running asyncio event loop")
        return future

    def start(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        abandon_on_cancel: bool = True,
    ) -> Awaitable[Any]:
        """``fn(*args, **kwargs)`` on a worker thread, as an awaitable to await at once in the calling task.

        On asyncio this pool's future (no coroutine in between: the cheapest way); elsewhere (trio) a call
        of ``anyio.to_thread.run_sync`` with ``abandon_on_cancel``. Whether the running loop is asyncio
        is asked once per loop.
        """
        loop = _running_loop()
        cached = self._inbox
        if cached is None or cached[0] is not loop:
            if loop is None or sniffio.current_async_library() != "asyncio":
                call = functools.partial(fn, *args, **kwargs)
                return anyio.to_thread.run_sync(call, abandon_on_cancel=abandon_on_cancel)
            cached = self._inbox = (loop, _Inbox(loop, anyio.lowlevel.current_token()))
        job = _Waiter(loop=loop)
        job._wake = None
        job._inbox = cached[1]
        job._context = contextvars.copy_context()
        job._fn, job._args, job._kwargs = fn, args, kwargs
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
        return job

    async def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on a worker thread; its result (or exception) here. Call it on an asyncio loop."""
        return await self.submit(fn)


_DEFAULT: list[WorkerPool] = []
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool (40 threads at most, like anyio's default limiter), created on first use."""
    if not _DEFAULT:
        with _DEFAULT_LOCK:
            if not _DEFAULT:
                _DEFAULT.append(WorkerPool())
    return _DEFAULT[0]


def call_sync(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] = _NO_KWARGS,
    pool: WorkerPool | None = None,
    *,
    abandon_on_cancel: bool = True,
) -> Awaitable[Any]:
    """``fn(*args, **kwargs)`` on a worker thread, as an awaitable to await at once in the calling task.

    ``pool`` (default: the shared one) on asyncio, else anyio's threads with ``abandon_on_cancel``; see
    ``WorkerPool.start``.
    """
    if pool is None:
        pool = _DEFAULT[0] if _DEFAULT else default_pool()
    return pool.start(fn, args, kwargs, abandon_on_cancel)


async def run_sync(
    fn: Callable[[], Any], pool: WorkerPool | None = None, *, abandon_on_cancel: bool = True
) -> Any:
    """``fn()`` on a worker thread: ``pool`` (default: the shared one) on asyncio, else anyio's threads.

    The pool always abandons a cancelled call; ``abandon_on_cancel`` is for anyio's threads (trio).
    """
    return await call_sync(fn, (), _NO_KWARGS, pool, abandon_on_cancel=abandon_on_cancel)


def threaded(fn: Callable[..., Any], pool: WorkerPool | None = None) -> Callable[..., Awaitable[Any]]:
    """An async stand-in for the sync ``fn`` that runs it with ``call_sync`` on ``pool``.

    Off asyncio it waits for the function even when cancelled, as ``anyio.to_thread.run_sync`` does.
    """

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        return await call_sync(fn, args, kwargs, pool, abandon_on_cancel=False)

    return call
