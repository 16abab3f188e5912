"""Sync handlers on the worker pool: off the loop, with the caller's context, anyio.from_thread usable."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import types
from typing import Any

import anyio
import anyio.from_thread
import pytest

from mcpframe import _inbox, _threads
from mcpframe._threads import POOLED, WorkerPool, _Inbox, _Waiter, call_sync, default_pool, run_sync
from mcpframe.server import Context, Server

from ._driver import legacy

pytestmark = pytest.mark.anyio

needs_pool = pytest.mark.skipif(
    not POOLED,
    reason="mcpframe's own worker threads are the private path; without it calls take anyio.to_thread",
)

_TAG: contextvars.ContextVar[str] = contextvars.ContextVar("tag", default="unset")


@needs_pool
async def test_sync_tools_run_on_pool_threads_and_may_call_back_into_the_loop() -> None:
    server = Server("threads")
    loop_thread = threading.get_ident()

    @server.tool
    def where(ctx: Context) -> str:
        """Reports its thread and logs through the event loop."""
        anyio.from_thread.run(ctx.info, "from a worker")  # needs the worker's event loop token
        return f"{threading.current_thread().name} {threading.get_ident() != loop_thread}"

    async with legacy(server) as client:
        result = await client.request("tools/call", {"name": "where"})
        logged = await client.wait_for("notifications/message")
    assert result["content"] == [{"type": "text", "text": "mcpframe-worker True"}]
    assert logged[0]["data"] == "from a worker"


async def test_run_sync_copies_context_and_reraises() -> None:
    _TAG.set("caller")
    assert await run_sync(_TAG.get) == "caller"

    def boom() -> None:
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        await run_sync(boom)


@needs_pool
async def test_blocked_workers_do_not_hold_the_queue_up_and_the_limit_holds() -> None:
    pool = WorkerPool(max_workers=2)
    gate = threading.Event()
    started = threading.Semaphore(0)
    results: list[int] = []

    def job(n: int) -> int:
        started.release()
        gate.wait(5)
        return n

    async def one(n: int) -> None:
        results.append(await pool.run(functools.partial(job, n)))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(one, n)
            # the first worker blocks on the gate; the stall watch wakes a second for the queued jobs
            for _ in range(2):
                assert await anyio.to_thread.run_sync(functools.partial(started.acquire, timeout=5))
            assert pool._threads == 2
            assert not started.acquire(blocking=False)  # the limit: no third worker took a job
            gate.set()
    assert sorted(results) == list(range(6))
    assert pool._threads == 2


@needs_pool
async def test_calls_that_block_together_get_a_worker_each_up_to_the_limit() -> None:
    pool = WorkerPool(max_workers=8)
    barrier = threading.Barrier(8, timeout=5)  # passes only when all eight calls run at once

    with anyio.fail_after(10):
        values = await asyncio.gather(*(pool.run(barrier.wait) for _ in range(8)))
    assert sorted(values) == list(range(8))
    assert pool._threads == 8


async def test_quick_calls_are_not_held_up_behind_one_that_blocks() -> None:
    pool = WorkerPool(max_workers=8)
    gate = threading.Event()
    with anyio.fail_after(10):
        slow = asyncio.ensure_future(pool.run(functools.partial(gate.wait, 5)))
        await asyncio.sleep(0)  # its worker is awake, so the quick calls queue behind it
        values = await asyncio.gather(*(pool.run(functools.partial(str, n)) for n in range(300)))
        assert not gate.is_set()  # all answered while the first call still blocks
        gate.set()
        assert await slow is True
    assert values == [str(n) for n in range(300)]


@needs_pool
async def test_short_calls_in_a_burst_share_one_awake_worker() -> None:
    pool = WorkerPool(max_workers=8, stall=3600)  # no stall watch here: only the hand-over rule decides
    with anyio.fail_after(10):
        values = await asyncio.gather(*(pool.run(functools.partial(str, n)) for n in range(500)))
    assert values == [str(n) for n in range(500)]
    assert pool._threads == 1  # queued behind the awake worker, not one wake-up (and thread) each


@needs_pool
async def test_one_call_at_a_time_always_finds_the_same_worker_idle() -> None:
    pool = WorkerPool(max_workers=8)
    with anyio.fail_after(10):
        threads = {await pool.run(threading.get_ident) for _ in range(300)}
    assert len(threads) == 1  # the worker is idle again before its caller hears of the result
    assert pool._threads == 1


@needs_pool
async def test_a_thread_that_cannot_start_fails_its_call_and_the_pool_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = WorkerPool(max_workers=2)

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with anyio.fail_after(5):
        with pytest.raises(RuntimeError, match="can't start new thread"):
            await pool.submit(int, 1)
        monkeypatch.undo()
        assert await pool.submit(int, 2) == 2
    assert pool._threads == 1


@needs_pool
async def test_a_stall_watch_left_by_a_loop_that_ended_is_taken_over() -> None:
    pool = WorkerPool(max_workers=2)
    gate, second = threading.Event(), threading.Event()
    ended = asyncio.new_event_loop()
    ended.close()
    with anyio.fail_after(5):
        first = asyncio.ensure_future(pool.run(functools.partial(gate.wait, 5)))
        await asyncio.sleep(0)  # its worker is awake (blocked on the gate)
        pool._watch = ended  # as if a loop that has since ended had armed the watch
        assert await pool.run(second.set) is None  # queued, then given a second worker by this loop's watch
        gate.set()
        assert await first is True
    assert pool._threads == 2


@needs_pool
async def test_a_cancelled_call_is_abandoned_and_the_worker_reused() -> None:
    pool = WorkerPool(max_workers=1)
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(5)
        return "late"

    with anyio.fail_after(5):
        with anyio.move_on_after(5) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(pool.run, slow)
                await anyio.to_thread.run_sync(started.wait)
                tg.cancel_scope.cancel()
        assert not scope.cancelled_caught
        release.set()
        assert await pool.run(lambda: "next") == "next"
    assert pool._threads == 1


def test_default_pool_is_shared() -> None:
    assert default_pool() is default_pool()


def test_one_pool_serves_several_event_loops_at_once() -> None:
    pool = WorkerPool(max_workers=3)
    totals: dict[str, int] = {}

    async def burst(name: str) -> None:
        values = await asyncio.gather(*(pool.run(functools.partial(int, n)) for n in range(300)))
        totals[name] = sum(values)

    threads = [threading.Thread(target=asyncio.run, args=(burst(name),)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert totals == {"a": sum(range(300)), "b": sum(range(300))}


async def test_every_caller_gets_its_own_result_in_a_burst() -> None:
    pool = WorkerPool(max_workers=3)
    with anyio.fail_after(10):
        values = await asyncio.gather(*(pool.run(functools.partial(str, n)) for n in range(500)))
    assert values == [str(n) for n in range(500)]


async def test_submit_passes_arguments_and_reraises() -> None:
    pool = WorkerPool(max_workers=2)

    def pair(a: int, *, b: int) -> tuple[int, int]:
        return a, b

    def boom() -> None:
        raise LookupError("worker")

    with anyio.fail_after(5):
        assert await pool.submit(pair, 1, b=2) == (1, 2)
        with pytest.raises(LookupError, match="worker"):
            await pool.submit(boom)
        assert await call_sync(pair, (3,), {"b": 4}, pool) == (3, 4)


async def test_the_function_sees_the_callers_context_and_its_changes_stay_there() -> None:
    pool = WorkerPool(max_workers=1)
    _TAG.set("caller")

    def retag() -> str:
        seen = _TAG.get()
        _TAG.set("worker")
        return seen

    with anyio.fail_after(5):
        assert await pool.submit(retag) == "caller"
    assert _TAG.get() == "caller"


@needs_pool
async def test_a_call_cancelled_while_queued_is_dropped_and_the_pool_goes_on() -> None:
    pool = WorkerPool(max_workers=1)
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def hold() -> str:
        started.set()
        release.wait(5)
        return "held"

    def queued() -> str:
        ran.append("queued")
        return "queued"

    with anyio.fail_after(5):
        holder = asyncio.ensure_future(pool.run(hold))
        await anyio.to_thread.run_sync(started.wait)
        waiting = asyncio.ensure_future(pool.run(queued))
        await asyncio.sleep(0)  # it is in the queue behind `hold`
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting  # promptly: the busy worker does not hold it up
        release.set()
        assert await holder == "held"
        assert await pool.run(lambda: "after") == "after"
    assert ran == []  # withdrawn: a call cancelled while queued never starts


@needs_pool
async def test_the_future_behaves_as_a_future_for_other_callbacks() -> None:
    pool = WorkerPool(max_workers=1)
    seen: list[object] = []
    with anyio.fail_after(5):
        future = pool.submit(lambda: "value")
        future.add_done_callback(lambda f: seen.append(f.result()))
        assert await future == "value"
        await asyncio.sleep(0)  # the extra callback is scheduled as a plain future's
    assert seen == ["value"]

    loop = asyncio.get_running_loop()
    other = pool.submit(lambda: None)
    wake = loop.create_future()
    other.add_done_callback(wake.set_result)
    assert other.remove_done_callback(wake.set_result) == 1
    await other
    assert not wake.done()

    cancelled = pool.submit(lambda: None)
    cancelled.add_done_callback(wake.set_result)
    assert cancelled.cancel()
    assert not cancelled.cancel()
    with anyio.fail_after(5):
        assert await wake is cancelled


def test_a_resumed_task_that_escapes_leaves_the_rest_of_the_batch_for_later() -> None:
    loop = asyncio.new_event_loop()
    try:
        inbox = _Inbox(loop, None)
        calls = [_Waiter(loop=loop), _Waiter(loop=loop)]
        woken: list[object] = []

        def escape(future: object) -> None:
            raise KeyboardInterrupt

        for n, (call, callback) in enumerate(zip(calls, (escape, woken.append), strict=True)):
            call._wake = None
            call.add_done_callback(callback)
            call._value, call._error = n, None
            inbox.put(call)
        with pytest.raises(KeyboardInterrupt):
            inbox._drain()
        assert calls[0].result() == 0
        assert not calls[1].done()
        loop.run_until_complete(asyncio.sleep(0))
        assert calls[1].result() == 1
        assert woken == [calls[1]]
    finally:
        loop.close()


@needs_pool
async def test_a_burst_of_sync_tool_calls_each_gets_its_own_answer() -> None:
    server = Server("burst")

    @server.tool
    def tagged(n: int) -> str:
        """Its argument back, or a failure for multiples of seven."""
        if n % 7 == 0:
            raise ValueError(f"seven divides {n}")
        return f"{n} on {threading.current_thread().name}"

    answers: dict[int, dict[str, object]] = {}
    async with legacy(server) as client:

        async def call(n: int) -> None:
            answers[n] = await client.request("tools/call", {"name": "tagged", "arguments": {"n": n}})

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for n in range(1, 301):
                    tg.start_soon(call, n)
    assert len(answers) == 300
    for n, answer in answers.items():
        text = answer["content"][0]["text"]  # type: ignore[index]
        if n % 7 == 0:
            assert answer.get("isError") is True
            assert f"seven divides {n}" in text
        else:
            assert text == f"{n} on mcpframe-worker"


@needs_pool
async def test_the_pool_asks_which_library_runs_once_per_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = WorkerPool(max_workers=1)
    asked: list[str] = []

    def current_async_library() -> str:
        asked.append("asyncio")
        return "asyncio"

    monkeypatch.setattr(
        _threads, "sniffio", types.SimpleNamespace(current_async_library=current_async_library)
    )
    with anyio.fail_after(5):
        for n in range(3):
            assert await pool.submit(int, n) == n
    assert asked == ["asyncio"]  # the first call on this loop asked; the others trusted the cached answer


def test_off_an_event_loop_the_pool_hands_over_to_anyio_and_submit_refuses() -> None:
    pool = WorkerPool(max_workers=1)
    pending = pool.start(int, (), {})
    assert not isinstance(pending, asyncio.Future)  # anyio.to_thread.run_sync's coroutine
    pending.close()  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="asyncio"):
        pool.submit(int)
    assert pool._threads == 0


@needs_pool
async def test_each_sync_tool_call_wakes_the_loop_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker hands its result back with one ring of the loop's bell (one eventfd write, one loop
    wake-up, one read) per call made one at a time: no second hop for the answer, and no
    `call_soon_threadsafe` (no self-pipe) at all."""
    server = Server("wakes")

    @server.tool
    def same(text: str) -> str:
        """Its argument back."""
        return text

    loop = asyncio.get_running_loop()
    inbox = _inbox.inbox_of(loop)
    rings: list[str] = []
    reads: list[str] = []
    soon: list[str] = []
    real_ring, real_clear, real_soon = inbox._ring, inbox._clear, loop.call_soon_threadsafe
    assert real_clear is not None  # an asyncio selector loop: the bell is watched with add_reader

    def ring() -> object:
        rings.append(threading.current_thread().name)
        return real_ring()

    def clear() -> object:
        reads.append(threading.current_thread().name)
        return real_clear()

    def counted(callback: Any, *args: Any, context: contextvars.Context | None = None) -> asyncio.Handle:
        soon.append(getattr(callback, "__qualname__", repr(callback)))
        return real_soon(callback, *args, context=context)

    async with legacy(server) as client:
        first = await client.request("tools/call", {"name": "same", "arguments": {"text": "warm"}})
        assert first["content"][0]["text"] == "warm"
        monkeypatch.setattr(inbox, "_ring", ring)
        monkeypatch.setattr(inbox, "_clear", clear)
        monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
        for n in range(20):
            answer = await client.request("tools/call", {"name": "same", "arguments": {"text": f"t{n}"}})
            assert answer["content"][0]["text"] == f"t{n}"
        monkeypatch.undo()
    assert rings == ["mcpframe-worker"] * 20  # rung once per call, by the worker
    assert reads == [threading.current_thread().name] * 20  # and read once per call, on the loop
    assert soon == []
