"""``asyncio_tasks.step_now``: a task created just now has its first step run at once (the private path), as
its own task, with whatever task was current put back after; it does nothing when that step is not the last
thing scheduled, and nothing on the public path, where the task runs when the loop gets to it.

No test waits for time to pass: each checks what ran before the loop could turn, then awaits the task.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpframe._unstable import asyncio_tasks

pytestmark = pytest.mark.anyio

PRIVATE = asyncio_tasks.CHOICE.private


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Steps:
    """A coroutine that records its first step (the task current in it) and then waits on ``gate``."""

    def __init__(self) -> None:
        self.seen: list[asyncio.Task[Any] | None] = []
        self.gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def run(self) -> str:
        self.seen.append(asyncio.current_task())
        return await self.gate


async def test_the_first_step_runs_at_once_as_the_task_s_own_on_the_private_path() -> None:
    loop = asyncio.get_running_loop()
    steps = Steps()
    outer = asyncio.current_task()
    task = loop.create_task(steps.run())
    ran = asyncio_tasks.step_now(loop, task)
    assert ran is PRIVATE
    assert steps.seen == ([task] if PRIVATE else [])  # on the public path: not before the loop turns
    assert asyncio.current_task() is outer  # the test's own task is current again
    steps.gate.set_result("done")
    assert await asyncio.wait_for(task, 10) == "done"
    assert steps.seen == [task]  # the first step ran once, either way


async def test_a_step_scheduled_after_it_leaves_the_task_to_the_loop() -> None:
    loop = asyncio.get_running_loop()
    steps = Steps()
    task = loop.create_task(steps.run())
    later: list[str] = []
    loop.call_soon(later.append, "other")  # the task's step is no longer the last thing scheduled
    assert asyncio_tasks.step_now(loop, task) is False
    assert steps.seen == []
    steps.gate.set_result("done")
    assert await asyncio.wait_for(task, 10) == "done"
    assert steps.seen == [task]
    assert later == ["other"]


async def test_a_task_that_finishes_in_its_first_step_is_done_at_once() -> None:
    loop = asyncio.get_running_loop()

    async def quick() -> int:
        return 7

    task = loop.create_task(quick())
    asyncio_tasks.step_now(loop, task)
    assert task.done() is PRIVATE
    assert await asyncio.wait_for(task, 10) == 7


async def test_a_task_cancelled_before_its_first_step_is_cancelled_there() -> None:
    loop = asyncio.get_running_loop()
    steps = Steps()
    task = loop.create_task(steps.run())
    task.cancel()
    asyncio_tasks.step_now(loop, task)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert steps.seen == []  # the cancel came first: the coroutine never ran
