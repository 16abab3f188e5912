"""`ThreadPump` (the thread pump's reader): it ends with `run` when `wakeable`, a work's error is raised
rather than taken for the loop's end, and it waits on fds past `select`'s 1024 limit."""

from __future__ import annotations

import contextlib
import os
import resource
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mcpframe.proxy.pump import ThreadPump

pytestmark = pytest.mark.anyio

HIGH_FD = 1100


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    fds = [r, w]
    yield r, w
    for fd in fds:
        with contextlib.suppress(OSError):  # a test closed it already
            os.close(fd)


async def test_a_wakeable_pump_ends_with_run_and_leaves_the_next_chunk_unread(pipe: tuple[int, int]) -> None:
    r, w = pipe
    chunks: list[bytes] = []

    def step(chunk: bytes) -> None:
        chunks.append(chunk)

    pump = ThreadPump(r, step, name="test-wakeable", wakeable=True)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(pump.run)
            await anyio.lowlevel.checkpoint()
            group.cancel_scope.cancel()  # `serve_stdio` ended other than by the client's EOF
        assert await pump.wait_ended(10)
    os.write(w, b"next\n")  # what the next reader of the fd (a second `serve_stdio`) must get
    assert os.read(r, 100) == b"next\n"
    assert chunks == []


async def test_an_error_of_the_work_on_the_loop_is_raised_not_taken_for_an_eof(pipe: tuple[int, int]) -> None:
    r, w = pipe

    async def work() -> None:
        raise RuntimeError("the decoder is closed")

    def step(chunk: bytes) -> Callable[[], Coroutine[Any, Any, None]]:
        return work

    os.write(w, b"x\n")
    with anyio.fail_after(10), pytest.raises(RuntimeError, match="the decoder is closed"):
        await ThreadPump(r, step, name="test-error").run()


async def test_a_pump_made_non_blocking_waits_on_an_fd_past_1024() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= HIGH_FD:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, HIGH_FD + 1), hard))
    r0, w = os.pipe()
    r = os.dup2(r0, HIGH_FD)
    os.close(r0)
    first = threading.Event()
    chunks: list[bytes] = []

    def step(chunk: bytes) -> None:
        chunks.append(chunk)
        os.set_blocking(r, False)  # someone made it non-blocking: the pump must wait, not fail
        first.set()

    try:
        os.write(w, b"a")
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(ThreadPump(r, step, name="test-high-fd").run)
                await anyio.to_thread.run_sync(first.wait, abandon_on_cancel=True)
                os.write(w, b"b")
                os.close(w)
                w = -1
    finally:
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert b"".join(chunks) == b"ab"
