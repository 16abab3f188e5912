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
