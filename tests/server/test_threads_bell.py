"""The worker pool's wake-up of its event loop: one bell (an eventfd watched with ``add_reader``) per loop."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading
import weakref
from collections.abc import Callable

import anyio
import pytest

from mcpframe import _inbox
from mcpframe._threads import POOLED, WorkerPool

pytestmark = pytest.mark.skipif(
    not POOLED,
    reason="mcpframe's own worker threads are the private path; without it calls take anyio.to_thread",
)


@pytest.mark.anyio
async def test_pools_on_one_loop_share_its_inbox() -> None:
    first, second = WorkerPool(max_workers=1), WorkerPool(max_workers=1)
    with anyio.fail_after(5):
        assert await first.submit(str, 1) == "1"
        assert await second.submit(str, 2) == "2"
    inbox = _inbox.inbox_of(asyncio.get_running_loop())
    assert first._inbox is not None
    assert second._inbox is not None
    assert first._inbox[1] is inbox
    assert second._inbox[1] is inbox


def test_a_loop_that_is_gone_takes_its_inbox_and_bell_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[tuple[int, ...]] = []
    close = _inbox.Bell.close

    def recorded(bell: _inbox.Bell) -> None:
        closed.append(bell._fds)
        close(bell)

    monkeypatch.setattr(_inbox.Bell, "close", recorded)
    pool = WorkerPool(max_workers=1)
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(_submitted(pool, "x")) == "x"
        inbox = _inbox.inbox_of(loop)
        assert inbox._bell is not None
        fds = inbox._bell._fds
    finally:
        loop.close()
    gone = weakref.ref(inbox)
    del inbox, loop
    pool._inbox = None  # the pool's cache of the last loop's inbox holds that loop
    gc.collect()
    assert gone() is None  # nothing else held it: not the worker, idle, nor its thread's first job
    assert fds in closed  # and its descriptors were closed with it


def test_a_bell_closed_forgets_its_descriptors() -> None:
    bell = _inbox.Bell()
    bell.ring()
    bell.clear()  # one read empties it
    with pytest.raises(BlockingIOError):
        bell.clear()
    bell.close()
    assert bell._fds == ()
    bell.close()  # twice is harmless


def test_a_worker_that_rings_a_closed_loop_goes_on_serving() -> None:
    pool = WorkerPool(max_workers=1)
    started, release = threading.Event(), threading.Event()

    def blocked() -> str:
        started.set()
        release.wait(10)
        return "late"

    loop = asyncio.new_event_loop()
    try:
        late = loop.run_until_complete(_started(pool, blocked))
        assert started.wait(10)
    finally:
        loop.close()
    release.set()  # its answer rings the bell of a closed loop: nobody reads it, nothing breaks
    other = asyncio.new_event_loop()
    try:  # the one worker finished that call and takes this one
        assert other.run_until_complete(_submitted(pool, "next")) == "next"
    finally:
        other.close()
    assert pool._threads == 1
    assert not late.done()  # its loop closed first: the result was dropped, never set


async def _submitted(pool: WorkerPool, value: str) -> str:
    with anyio.fail_after(10):
        result = await pool.submit(str, value)
    assert isinstance(result, str)
    return result


async def _started(pool: WorkerPool, fn: object) -> asyncio.Future[object]:
    future = pool.submit(fn)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    return future


_REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("_REQUEST")


def test_the_bell_keeps_no_copy_of_its_first_callers_context() -> None:
    pool = WorkerPool(max_workers=1)
    loop = asyncio.new_event_loop()
    kept: list[contextvars.Context | None] = []
    add_reader = loop.add_reader

    def watched(fd: int, callback: Callable[..., object], *args: object) -> None:
        add_reader(fd, callback, *args)
        kept.append(contextvars.copy_context())  # what the reader's handle copied, as asyncio copies it

    loop.add_reader = watched  # type: ignore[method-assign]
    try:
        _REQUEST.set("the first request's")
        assert loop.run_until_complete(_submitted(pool, "x")) == "x"
    finally:
        loop.close()
    assert len(kept) == 1
    assert _REQUEST not in kept[0]  # registered from an empty context, not the caller's
