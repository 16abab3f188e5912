"""Worker threads for synchronous handlers, cheaper per call than ``anyio.to_thread.run_sync``.

A sync tool, resource or prompt function (mcpframe's own, or an SDK server's under the compat engine) runs on
a worker thread so it never blocks the event loop. ``anyio.to_thread.run_sync`` costs about a hundred
microseconds per call (far more with many calls in flight); on asyncio this pool does the same job for
a fraction of that: the function runs with a copy of the caller's context variables, at most
``max_workers`` at once, and ``anyio.from_thread.run``/``run_sync`` work inside it as in an anyio worker.
A cancelled call stops being awaited; its thread finishes the function and the result is dropped, as with
``abandon_on_cancel=True``; one cancelled while still queued (every worker busy) never starts. Other event
loops (trio) use anyio's own threads.

Results come back to their event loop in batches: the first result of a batch wakes the loop, which then
settles every result that arrived and resumes each waiting task directly (not a loop iteration later),
woken by a bell of its own (``mcpframe._inbox``).
Jobs go to as few awake workers as keep them moving (one, for short functions), with more woken in place of
workers that block: see ``WorkerPool``.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.lowlevel
import anyio.to_thread
import sniffio

from mcpframe._inbox import Inbox as _Inbox
from mcpframe._inbox import Waiter as _Waiter
from mcpframe._inbox import inbox_of as _inbox_of
from mcpframe._unstable.anyio_tasks import THREAD_TOKEN
from mcpframe._unstable.anyio_tasks import TOKEN_HOLDER as _TOKEN_HOLDER
from mcpframe._unstable.asyncio_tasks import running_loop as _running_loop

__all__ = ["POOLED", "WorkerPool", "call_sync", "default_pool", "run_sync", "threaded"]

POOLED = THREAD_TOKEN
"""Whether calls on asyncio go to this pool's threads. Those threads carry anyio's event-loop token (so
``anyio.from_thread`` works in them) only through a private anyio name (``mcpframe._unstable.anyio_tasks``);
without it, every call takes ``anyio.to_thread.run_sync`` instead, as off asyncio."""
_NO_KWARGS: dict[str, Any] = {}


def _run(call: _Waiter, tokens: dict[str, object]) -> bool:
    """Run a call's function here (a worker thread) and keep its outcome on the call; ``False`` (run
    nothing) for a call cancelled while it waited in the queue, so a cancelled request's function never
    starts (reading the future's state from this thread is one attribute read under the GIL). The thread
    carries the call's anyio token meanwhile: ``tokens`` is this thread's own attribute dict of anyio's
    thread-local (``TOKEN_HOLDER.__dict__``), written as a dict: what ``set_thread_token`` and
    ``clear_thread_token`` do, without the thread-local's own lookup of that dict each time."""
    if call.cancelled():
        return False
    tokens["current_token"] = call._inbox.token
    try:
        call._value = call._context.run(call._fn, *call._args, **call._kwargs)
        call._error = None
    except BaseException as exc:
        call._value = None
        call._error = exc
    finally:
        del tokens["current_token"]
    return True


class _Worker:
    """One pool thread: the job it is handed while idle (it sleeps on ``wake`` meanwhile), and what the
    stall watch knows of it: jobs taken so far, that count at the watch's last look, and whether a worker
    has already been woken in its place during its current job."""

    __slots__ = ("idle", "job", "runs", "seen", "spared", "wake")

    def __init__(self) -> None:
        self.job: _Waiter | None = None
        self.wake = threading.Lock()
        self.wake.acquire()  # held until a job is handed over: the worker sleeps acquiring it
        self.idle = False
        self.runs = self.seen = 0
        self.spared = False


class WorkerPool:
    """Up to ``max_workers`` daemon threads, started as needed, as few awake as keep the jobs moving.

    Only one thread runs Python at a time (the GIL), so for short functions one awake worker going
    through a queue beats many contending for the interpreter. A job is handed straight to an idle worker
    (the one idle the shortest time: its caches are warm) only when no worker is awake; otherwise it waits
    in the queue, and the awake workers take it before they go idle.

    A function that blocks (I/O, a sleep, a lock) must not hold the queue up. While jobs wait, the loop
    that queued them looks every ``stall`` seconds: a worker still on the job it had at the previous look
    is taken to be blocked, and one more worker is woken (or started) in its place, once per job; when no
    awake worker has moved on at all, as many more are woken as are awake (so blocking calls reach
    ``max_workers`` in a few looks). A blocked worker costs the jobs queued behind it a few milliseconds.

    A worker settles (goes idle, or takes its next job) before it tells the caller's loop of a result: a
    caller that waits for each answer always finds the same worker idle, and the worker never competes
    for the interpreter with the loop it has just woken.
    """

    def __init__(self, max_workers: int = 40, *, stall: float = 0.001) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self.max_workers = max_workers
        self.stall = stall
        """Seconds between two looks at the workers while jobs wait (see the class doc)."""
        self._lock = threading.Lock()
        self._queue: collections.deque[_Waiter] = collections.deque()  # jobs no worker has taken yet
        self._workers: list[_Worker] = []
        self._idle: list[_Worker] = []  # asleep, the last to go idle at the end
        self._awake = 0  # len(_workers) - len(_idle)
        self._watch: asyncio.AbstractEventLoop | None = None  # the loop whose timer looks at the workers
        self._inbox: tuple[asyncio.AbstractEventLoop, _Inbox] | None = None  # the last loop's inbox

    @property
    def _threads(self) -> int:
        return len(self._workers)

    def _worker(self, me: _Worker) -> None:
        job, me.job = me.job, None  # handed as for a woken worker: the thread's own args keep nothing alive
        assert job is not None
        tokens: dict[str, object] = _TOKEN_HOLDER.__dict__ if _TOKEN_HOLDER is not None else {}
        lock = self._lock
        while True:
            ran = _run(job, tokens)
            lock.acquire()  # not `with`: no bound __enter__/__exit__ made per job (on a worker thread,
            # where no KeyboardInterrupt can come between the acquire and the `try`)
            try:
                if self._queue:
                    following: _Waiter | None = self._queue.popleft()
                    me.runs += 1
                    me.spared = False
                else:
                    following = None
                    me.idle = True
                    self._awake -= 1
                    self._idle.append(me)
            finally:
                lock.release()
            if ran:  # a skipped (cancelled) call has nobody to wake
                job._inbox.put(job)  # settled first: see the class doc
            if following is None:
                del job  # an idle worker keeps no finished call (nor its result) alive
                me.wake.acquire()
                following, me.job = me.job, None
                assert following is not None
            job = following

    def _hire(self) -> tuple[_Worker, bool]:
        """An idle or a new worker (``True``: start its thread) taking a job; call with the lock held."""
        if self._idle:
            worker, new = self._idle.pop(), False
        else:
            worker, new = _Worker(), True
            self._workers.append(worker)
        worker.idle = False
        worker.runs += 1
        worker.seen = worker.runs
        worker.spared = False
        self._awake += 1
        return worker, new

    def _hand(self, worker: _Worker, new: bool, job: _Waiter) -> None:
        if not new:
            worker.job = job
            worker.wake.release()
            return
        worker.job = job
        try:
            name = "mcpframe-worker"
            thread = threading.Thread(target=self._worker, args=(worker,), daemon=True, name=name)
            thread.start()
        except BaseException as exc:  # no thread to be had (a resource limit): the caller gets the error
            with self._lock:
                self._workers.remove(worker)
                self._awake -= 1
            worker.job = None
            job._value, job._error = None, exc
            job._inbox.put(job)

    def _blocked(self) -> int:
        """How many more workers the queue needs now (see the class doc); call with the lock held."""
        stuck = moved = 0
        for worker in self._workers:
            if worker.idle:
                continue
            if worker.runs != worker.seen:
                moved += 1
                worker.seen = worker.runs
            elif not worker.spared:
                stuck += 1
                worker.spared = True
        if moved:
            return stuck
        for worker in self._workers:
            worker.spared = True  # every awake one is blocked: double them
        return max(1, self._awake)

    def _look(self, loop: asyncio.AbstractEventLoop) -> None:
        """The stall watch, on ``loop``: wake workers in place of blocked ones while jobs wait."""
        hired: list[tuple[_Worker, bool, _Waiter]] = []
        with self._lock:
            queue = self._queue
            room = len(self._idle) + self.max_workers - len(self._workers)
            if queue and room:
                for _ in range(min(len(queue), room, self._blocked())):
                    hired.append((*self._hire(), queue.popleft()))
                room = len(self._idle) + self.max_workers - len(self._workers)
            go_on = bool(queue) and room > 0
            if not go_on and self._watch is loop:
                self._watch = None
        for worker, new, job in hired:
            self._hand(worker, new, job)
        if go_on:
            loop.call_later(self.stall, self._look, loop)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        """Start ``fn(*args, **kwargs)`` on a worker thread; await the returned future for its outcome.

        Call it on a running asyncio loop, in a task, and await the future in that same task at once.
        """
        future = self.start(fn, args, kwargs)
        if isinstance(future, asyncio.Future):
            return future
        if not POOLED and _running_loop() is not None:  # anyio's threads, wrapped as asyncio wants
            return asyncio.ensure_future(future)
        future.close()  # type: ignore[attr-defined]  # pragma: no cover - asyncio only, as documented
        raise RuntimeError("WorkerPool.submit() needs a running asyncio event loop")

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
            if loop is None or not POOLED or sniffio.current_async_library() != "asyncio":
                call = functools.partial(fn, *args, **kwargs)
                return anyio.to_thread.run_sync(call, abandon_on_cancel=abandon_on_cancel)
            cached = self._inbox = (loop, _inbox_of(loop))
        job = _Waiter(loop=loop)
        job._wake = None
        job._inbox = cached[1]
        job._context = contextvars.copy_context()
        job._fn, job._args, job._kwargs = fn, args, kwargs
        with self._lock:
            if not self._awake and self._idle:  # the common case, `_hire` and `_hand` inlined (per call)
                worker = self._idle.pop()
                worker.idle = False
                worker.runs += 1
                worker.seen = worker.runs
                worker.spared = False
                self._awake += 1
                worker.job = job
                worker.wake.release()
                return job
            if self._awake:  # an awake worker takes it before it goes idle
                self._queue.append(job)
                hired = None
                watch = self._watch is None or not self._watch.is_running()
                if watch:
                    self._watch = loop
                    for worker in self._workers:
                        worker.seen = worker.runs
            else:
                hired, watch = self._hire(), False
        if hired is not None:
            self._hand(*hired, job)
        elif watch:
            loop.call_later(self.stall, self._look, loop)
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
