"""Host tasks that go back to idle (``EagerStarter(reuse=True)``, a Session's): a handler that suspends runs
on a host that ran an earlier one, and still behaves as in a task of its own: one task for all its steps, a
context of its own, a cancel that ends it and its host, the loop turns a bare yield costs.

No test here waits for time to pass: what a handler waits on is a future the test sets.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import weakref
from typing import Any

import pytest

from mcpframe.session.eager import HOSTED, EagerStarter

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not HOSTED, reason="host tasks need the private asyncio path"),
]

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_eager_reuse", default="unset")
KEPT: contextvars.ContextVar[object] = contextvars.ContextVar("test_eager_reuse_kept", default=None)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _starter() -> EagerStarter:
    loop = asyncio.get_running_loop()
    starter = EagerStarter(loop, loop.create_task, reuse=True)
    await asyncio.sleep(0)  # its host is running
    return starter


class Suspends:
    """A handler that records its task at each step and waits on a future the test sets."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.tasks: list[asyncio.Task[Any] | None] = []
        self.seen: list[str] = []
        self.outcome: str | None = None

    async def run(self) -> None:
        self.seen.append(VAR.get())
        VAR.set(self.name)
        self.tasks.append(asyncio.current_task())
        try:
            await self.release
        except asyncio.CancelledError:
            self.outcome = "cancelled"
            raise
        self.tasks.append(asyncio.current_task())
        self.seen.append(VAR.get())
        self.outcome = "done"


async def _turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def _a_later_handler_runs_on_another_host(starter: EagerStarter, ended: asyncio.Task[Any]) -> None:
    """The handler started after `ended`'s host ended runs, to its end, on a task other than `ended`."""
    later = Suspends("later")
    other = starter.start(later.run())
    assert other is not None
    assert other is not ended
    later.release.set_result(None)
    await _turns(2)
    assert later.outcome == "done"


async def test_a_host_back_from_its_handler_takes_a_later_one() -> None:
    starter = await _starter()
    handlers = [Suspends(f"h{n}") for n in range(4)]
    tasks = []
    for handler in handlers:  # one at a time: the idle host takes it, its next one is made or a spare
        task = starter.start(handler.run())
        assert task is not None
        tasks.append(task)
        handler.release.set_result(None)
        await _turns(2)
        assert handler.outcome == "done"
        assert not task.done()  # idle again, not ended
    assert tasks[2] is tasks[0]  # no task made for the third and fourth
    assert tasks[3] is tasks[1]
    # each handler saw one task for all its steps, and a context of its own (nothing of the one before)
    for handler, task in zip(handlers, tasks, strict=True):
        assert handler.tasks == [task, task]
        assert handler.seen == ["unset", handler.name]
    assert VAR.get() == "unset"
    starter.close()
    await _turns(2)
    assert all(task.done() and not task.cancelled() for task in tasks)


async def test_a_cancelled_handler_ends_its_host() -> None:
    starter = await _starter()
    first = Suspends("first")
    task = starter.start(first.run())
    assert task is not None
    task.cancel()
    await _turns(2)
    assert first.outcome == "cancelled"
    assert task.cancelled()
    await _a_later_handler_runs_on_another_host(starter, task)
    starter.close()


async def test_a_cancel_the_handler_swallowed_still_ends_its_host() -> None:
    """A cancel still counted (``cancelling()``) when the handler returns must not reach the next one."""
    starter = await _starter()
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def swallows() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await gate

    task = starter.start(swallows())
    assert task is not None
    task.cancel()
    await _turns(2)
    assert task.done()
    await _a_later_handler_runs_on_another_host(starter, task)
    starter.close()


async def test_close_ends_spare_and_busy_hosts() -> None:
    starter = await _starter()
    handlers = [Suspends(str(n)) for n in range(3)]
    tasks: list[asyncio.Task[None]] = []
    for handler in handlers:  # three at once, each on a host (the next one started before it is needed)
        task = starter.start(handler.run())
        assert task is not None
        tasks.append(task)
        await _turns(1)
    assert len(set(tasks)) == 3
    for handler in handlers[:2]:
        handler.release.set_result(None)
    await _turns(2)  # two back to idle as spares, one still waiting
    assert [task.done() for task in tasks] == [False, False, False]
    ending = starter.close()
    assert set(tasks[:2]) <= set(ending)  # the spares, and the idle host made after the third
    assert tasks[2] not in ending
    await asyncio.wait(ending)
    assert [task.done() for task in tasks] == [True, True, False]
    handlers[2].release.set_result(None)
    await _turns(2)
    assert handlers[2].outcome == "done"
    assert tasks[2].done()  # after close, a host does not go back to idle


async def test_a_bare_yield_costs_one_loop_turn() -> None:
    """`sleep(0)` in the first step: the handler goes on in the next loop turn, as an eager task of its own
    (3.12's `eager_task_factory`) would, not one turn later (its host takes over at once)."""
    log: list[int] = []
    turn = [0]

    async def handler() -> None:
        await asyncio.sleep(0)
        log.append(turn[0])

    starter = await _starter()
    assert starter.start(handler()) is not None
    while not log:
        await asyncio.sleep(0)
        turn[0] += 1
    assert log == [0]
    starter.close()


class _Value:
    """Something a handler keeps in a context variable: an idle host must not keep it alive."""


async def test_an_idle_host_keeps_nothing_of_its_last_handler() -> None:
    starter = await _starter()
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    refs: list[weakref.ref[_Value]] = []

    async def handler() -> None:
        value = _Value()
        refs.append(weakref.ref(value))
        KEPT.set(value)
        del value
        await release

    task = starter.start(handler())
    assert task is not None
    release.set_result(None)
    await _turns(2)
    assert not task.done()  # idle again, a spare
    gc.collect()
    assert refs[0]() is None
    starter.close()
