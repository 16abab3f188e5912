"""An eagerly started handler whose anyio cancel scope is cancelled before its next step: the cancellation
lands at that checkpoint, exactly as in a task of its own (a shortcut that stepped a hosted handler on its
host's wake-up let it run past a cancelled checkpoint, and lost `move_on_after(0)` altogether)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import anyio
import pytest

from mcpframe.session.eager import AVAILABLE, EagerStarter

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _started(how: str, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """`coro` in a task of its own, or started eagerly where this interpreter has an eager start (where it has
    none, as under the public-only switch on 3.11, a Session gives each handler a task: the first case)."""
    loop = asyncio.get_running_loop()
    if how == "own task" or not AVAILABLE:
        return loop.create_task(coro)
    starter = EagerStarter(loop, loop.create_task)
    await asyncio.sleep(0)  # its host is running
    return starter.start(coro)


@pytest.mark.parametrize("how", ["own task", "eager"])
async def test_a_scope_cancelled_from_outside_lands_at_the_next_checkpoint(how: str) -> None:
    log: list[object] = []
    scopes: list[anyio.CancelScope] = []

    async def handler() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await anyio.sleep(0)
            log.append("ran past the checkpoint")
        log.append(scope.cancelled_caught)

    task = await _started(how, handler())
    while not scopes:
        await asyncio.sleep(0)
    scopes[0].cancel()
    if task is not None:
        await task
    assert log == [True]


@pytest.mark.parametrize("how", ["own task", "eager"])
async def test_an_expired_deadline_lands_at_the_first_checkpoint(how: str) -> None:
    log: list[object] = []

    async def handler() -> None:
        with anyio.move_on_after(0) as scope:
            await anyio.sleep(0)
            log.append("ran past the checkpoint")
        log.append(scope.cancelled_caught)

    task = await _started(how, handler())
    if task is not None:
        await task
    assert log == [True]
