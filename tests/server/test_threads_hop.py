"""The worker hop: threads under ``SCHED_BATCH`` (Linux) when asked, per thread and never the loop's; the
stall watch leaves alone a worker that has not started its job yet (it waits for the interpreter)."""

from __future__ import annotations

import asyncio
import os
import threading

import anyio
import pytest

from mcpframe import _threads
from mcpframe._threads import BATCH_VAR, POOLED, WorkerPool, _Worker, batch_enabled
from mcpframe.server import Server

from ._driver import legacy

pytestmark = pytest.mark.anyio

needs_pool = pytest.mark.skipif(
    not POOLED,
    reason="mcpframe's own worker threads are the private path; without it calls take anyio.to_thread",
)
needs_batch = pytest.mark.skipif(
    not POOLED or not hasattr(os, "SCHED_BATCH") or not hasattr(os, "sched_getscheduler"),
    reason="SCHED_BATCH is Linux's, and the pool's own threads the private path",
)


def _policy() -> int:
    return os.sched_getscheduler(0)


@needs_batch
async def test_pool_threads_run_under_sched_batch_and_the_loops_thread_does_not() -> None:
    before = _policy()
    pool = WorkerPool(max_workers=2, batch=True)
    with anyio.fail_after(10):
        assert await pool.submit(_policy) == os.SCHED_BATCH
    assert _policy() == before  # the event loop's thread keeps its own policy


@needs_batch
async def test_batch_false_keeps_the_default_policy() -> None:
    pool = WorkerPool(max_workers=1, batch=False)
    with anyio.fail_after(10):
        assert await pool.submit(_policy) == _policy()


@needs_batch
async def test_the_environment_variable_turns_it_on_for_pools_made_afterwards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(BATCH_VAR, raising=False)
    assert not batch_enabled()  # off by default
    assert not WorkerPool(max_workers=1).batch
    for off in ("0", "false", "", "later"):
        monkeypatch.setenv(BATCH_VAR, off)
        assert not batch_enabled()
    for on in ("1", "true", " ON ", "yes"):
        monkeypatch.setenv(BATCH_VAR, on)
        assert batch_enabled()
    pool = WorkerPool(max_workers=1)
    monkeypatch.setenv(BATCH_VAR, "0")  # read when the pool is made, not later
    with anyio.fail_after(10):
        assert await pool.submit(_policy) == os.SCHED_BATCH


@needs_pool
async def test_a_refused_policy_leaves_the_thread_as_it_is_and_its_calls_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int] = []

    def refuse(pid: int, policy: int, param: object) -> None:
        asked.append(policy)
        raise PermissionError("not here")

    monkeypatch.setattr(_threads.os, "sched_setscheduler", refuse, raising=False)
    pool = WorkerPool(max_workers=3, batch=True)
    with anyio.fail_after(10):
        results = await asyncio.gather(*(pool.submit(str, n) for n in range(20)))
    assert results == [str(n) for n in range(20)]
    assert asked  # each new thread asked once, and went on with its jobs
    assert len(asked) == len(pool._workers)


async def test_sync_tool_calls_one_at_a_time_and_many_at_once_are_all_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch worker that does not preempt the loop still gets every job, and the loop is woken for every
    result, a failing one included, while another worker blocks: a lost hand-over or wake-up would hang
    here (the timeout is the failure guard)."""
    monkeypatch.setattr(_threads, "_DEFAULT", [WorkerPool(max_workers=4, batch=True)])
    server = Server("batch")
    loop_thread = threading.get_ident()
    release = threading.Event()
    started = threading.Event()

    @server.tool
    def echo(text: str) -> str:
        """Echo from a worker thread."""
        assert threading.get_ident() != loop_thread
        if text == "boom":
            raise ValueError("boom")
        return text

    @server.tool
    def hold() -> str:
        """Blocks its worker until released."""
        started.set()
        release.wait(30)
        return "held"

    def call(text: str) -> dict[str, object]:
        return {"name": "echo", "arguments": {"text": text}}

    async with legacy(server) as client:
        with anyio.fail_after(60):
            for n in range(300):
                answer = await client.request("tools/call", call(f"a{n}"))
                assert answer["content"] == [{"type": "text", "text": f"a{n}"}]
            failed = await client.request("tools/call", call("boom"))
            assert failed["isError"] is True
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.request, "tools/call", {"name": "hold"})
                await anyio.to_thread.run_sync(started.wait, 30)
                for burst in range(20):  # the held worker is blocked: the others take the bursts
                    texts = [f"b{burst}.{n}" for n in range(16)]
                    answers = await asyncio.gather(*(client.request("tools/call", call(t)) for t in texts))
                    assert [a["content"][0]["text"] for a in answers] == texts
                release.set()


@needs_batch
async def test_threads_a_sync_function_starts_inherit_the_policy() -> None:
    """Documented: like a nice value, the policy passes on to threads started from a worker."""
    pool = WorkerPool(max_workers=1, batch=True)

    def child_policy() -> int:
        seen: list[int] = []
        thread = threading.Thread(target=lambda: seen.append(_policy()))
        thread.start()
        thread.join(10)
        return seen[0]

    with anyio.fail_after(10):
        assert await pool.submit(child_policy) == os.SCHED_BATCH


def _awake(pool: WorkerPool, runs: int, began: int) -> _Worker:
    """A worker as the stall watch finds it: on its `runs`-th job, the `began`-th started, seen before."""
    worker = _Worker()
    worker.runs = worker.seen = runs
    worker.began = began
    pool._workers.append(worker)
    pool._awake += 1
    return worker


def test_the_watch_leaves_a_worker_that_has_not_started_its_job() -> None:
    pool = WorkerPool(max_workers=8)
    waiting = _awake(pool, runs=3, began=2)  # handed job 3, still waiting for the interpreter
    with pool._lock:
        assert pool._blocked() == 0  # nobody to wake in its place: a new worker would wait as well
    assert not waiting.spared
    waiting.began = 3  # it started the job and is still on it at the next look: blocked
    with pool._lock:
        assert pool._blocked() == 1
    assert waiting.spared
    with pool._lock:
        assert pool._blocked() == 1  # every awake one blocked, none moved: as many again (doubling)


def test_the_watch_counts_started_stuck_workers_beside_waiting_ones() -> None:
    pool = WorkerPool(max_workers=8)
    stuck = _awake(pool, runs=5, began=5)
    waiting = _awake(pool, runs=2, began=1)
    with pool._lock:
        assert pool._blocked() == 1  # one in place of the stuck one, none for the waiting one
    assert stuck.spared
    assert not waiting.spared
    with pool._lock:
        assert pool._blocked() == 0  # the stuck one was replaced once already


@pytest.mark.skipif(not POOLED, reason="the pool's own threads are the private path")
async def test_a_worker_blocked_in_its_function_is_still_replaced() -> None:
    """The queue behind a function that blocks moves on (the watch's rule still sees it as blocked)."""
    pool = WorkerPool(max_workers=2, stall=0.001)
    release = threading.Event()
    started = threading.Event()

    def block() -> str:
        started.set()
        release.wait(30)
        return "released"

    with anyio.fail_after(20):
        held = pool.submit(block)
        await anyio.to_thread.run_sync(started.wait, 10)
        assert await asyncio.gather(*(pool.submit(str, n) for n in range(10))) == [str(n) for n in range(10)]
        release.set()
        assert await held == "released"
