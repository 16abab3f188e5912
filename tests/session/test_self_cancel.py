"""A handler that cancels its own task in its first step and then suspends ends as it would in a task of
its own: the eager start (``session/eager.py``) hands it to its host task, whose wait for it took that
cancel, and the cancel is asked again of what the handler itself waits on. Each case runs with and without
the eager start and must come out the same.

No test here waits for time to pass: what a handler waits on is a future nothing sets.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from tests.session._support import RawPeer

from mcpframe.session import Request, Session
from mcpframe.session.eager import AVAILABLE as EAGER
from mcpframe.session.eager import HOSTED, EagerStarter
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class SelfCancel:
    """Handlers that cancel their own task first; ``waited`` records whether what each waited on was
    cancelled (a task cancels the future it waits on)."""

    def __init__(self) -> None:
        self.waited: dict[Any, bool] = {}

    async def __call__(self, request: Request) -> Any:
        if request.method == "echo":
            return "echo"
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        if request.method == "quit":  # the cancellation ends it: no answer
            await asyncio.sleep(0)
            return "not reached"
        waiting = asyncio.get_running_loop().create_future()
        try:
            if request.method == "catch-yield":
                await asyncio.sleep(0)
            else:
                await waiting
        except asyncio.CancelledError:
            self.waited[request.id] = waiting.cancelled()
            return "caught"
        return "not cancelled"


@pytest.mark.parametrize("eager", [True, False])
@pytest.mark.parametrize(
    "case",  # the method, its answer (None: none), whether what it waited on ended cancelled
    [("quit", None, None), ("catch-yield", "caught", False), ("catch-future", "caught", True)],
)
async def test_a_handler_that_cancels_its_own_task_then_suspends_ends_as_in_a_task_of_its_own(
    eager: bool,
    case: tuple[str, str | None, bool | None],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    method, answer, waited = case
    monkeypatch.setattr(Session, "eager_handlers", eager)
    handler = SelfCancel()
    left, right = memory_pair()
    peer = RawPeer(left)
    with caplog.at_level(logging.ERROR, logger="mcpframe"), anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            session = Session(right, request_handler=handler)
            tg.start_soon(session.run)
            await peer.request(1, method)
            await peer.request(2, "echo")
            reply, seen = await peer.until(2)
            assert reply.result == "echo"  # the session goes on
            if answer is not None and not seen:  # its answer may come after the next one's
                first, _ = await peer.until(1)
                seen.append(first)
            assert [(m.id, m.result) for m in seen] == ([] if answer is None else [(1, answer)])
            while session.in_flight:  # it ends (bounded by fail_after), whichever answer came first
                await anyio.lowlevel.checkpoint()
            await session.aclose()
    assert handler.waited.get(1) is waited
    assert [r.getMessage() for r in caplog.records] == []


def _first_step(kind: str, log: list[Any]) -> Any:
    """A handler whose first step cancels its own task as ``kind`` says (``outside``: once, and the test
    cancels it again after its first step), then waits twice, logging each cancellation it catches with
    ``cancelling()`` and whether what it waited on ended cancelled. What it waits on is set by a callback
    queued behind whatever its first step queued, so where no cancel lands it goes on."""

    async def handler() -> None:
        task = asyncio.current_task()
        assert task is not None
        if kind in ("once", "outside", "twice"):
            task.cancel()
        if kind == "twice":
            task.cancel()
        if kind == "cancel-uncancel":
            task.cancel()
            task.uncancel()
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            waiting = loop.create_future()
            loop.call_soon(lambda future=waiting: future.done() or future.set_result(None))
            try:
                await waiting
            except asyncio.CancelledError:
                log.append(("cancelled", attempt, task.cancelling(), waiting.cancelled()))
                continue
            log.append(("resumed", attempt, task.cancelling()))
            return
        log.append("caught both")

    return handler()


async def _run_first_step(kind: str, eager: bool) -> list[Any]:
    loop = asyncio.get_running_loop()
    log: list[Any] = []
    coro = _first_step(kind, log)
    if eager and EAGER:
        starter = EagerStarter(loop, loop.create_task)
        await asyncio.sleep(0)  # its host starts
        if HOSTED:
            assert starter._host is not None
            assert starter._host.started  # else start() spawns a task the ordinary way
        task = starter.start(coro)
        assert task is not None  # it suspended
    else:  # without an eager start the Session spawns a task the ordinary way
        task = loop.create_task(coro)
        await asyncio.sleep(0)
    if kind == "outside":  # after its first step, before its host (or task) runs again
        task.cancel()
    await asyncio.wait([task])
    log.append(("task", task.cancelled(), task.cancelling()))
    if eager and HOSTED:
        starter.close()
    return log


@pytest.mark.parametrize("kind", ["once", "twice", "outside", "cancel-uncancel"])
async def test_cancelling_counts_match_a_task_of_its_own(kind: str) -> None:
    """On a host task as in a task of its own: the same cancellations land, with the same
    ``cancelling()`` counts, on what it waits on, and the task ends the same (3.11 to 3.13)."""
    with anyio.fail_after(10):
        own = await _run_first_step(kind, eager=False)
        hosted = await _run_first_step(kind, eager=True)
    assert hosted == own
    if kind == "once":
        assert own[0] == ("cancelled", 1, 1, True)
    if kind == "twice":  # two requests, one delivery: counted twice
        assert own[0] == ("cancelled", 1, 2, True)
    if kind == "outside":  # the second comes while it waits after the first: still one delivery
        assert own[0] == ("cancelled", 1, 2, True)
