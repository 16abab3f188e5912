"""A Session's handlers that suspend, on host tasks that go back to idle between them (``EagerStarter``
with ``reuse``): each request is still answered, cancelled or left alone as in a task of its own, whichever
host ran the one before.

No test here waits for time to pass: a handler waits on an event the test sets.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from tests.session._support import raw_session

from mcpframe.session import Request
from mcpframe.session.eager import HOSTED

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Gated:
    """`wait` handlers hold until their gate opens; each records the task it ran on and how it ended."""

    def __init__(self) -> None:
        self.gates: dict[Any, asyncio.Event] = {}
        self.tasks: dict[Any, set[asyncio.Task[Any] | None]] = {}  # held: no id reused
        self.ended: dict[Any, str] = {}

    async def __call__(self, request: Request) -> Any:
        gate = self.gates.setdefault(request.id, asyncio.Event())
        self.tasks.setdefault(request.id, set()).add(asyncio.current_task())
        try:
            await gate.wait()
        except asyncio.CancelledError:
            self.ended[request.id] = "cancelled"
            raise
        self.tasks[request.id].add(asyncio.current_task())
        self.ended[request.id] = "answered"
        return request.id


async def test_a_cancel_reaches_its_own_request_on_a_reused_host() -> None:
    handler = Gated()
    with anyio.fail_after(10):
        async with raw_session(handler) as (_session, peer):
            for rid in range(1, 5):  # one at a time: hosts go back to idle and take later ones
                await peer.request(rid, "wait")
                while rid not in handler.gates:
                    await asyncio.sleep(0)
                handler.gates[rid].set()
                reply, _ = await peer.until(rid)
                assert reply.result == rid
            # two at once, the second cancelled by its client: only that one ends cancelled
            await peer.request(5, "wait")
            await peer.request(6, "wait")
            while 6 not in handler.gates or 5 not in handler.gates:
                await asyncio.sleep(0)
            await peer.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}}
            )
            while 6 not in handler.ended:
                await asyncio.sleep(0)
            handler.gates[5].set()
            reply, seen = await peer.until(5)
            assert reply.result == 5
            assert seen == []  # no answer for the cancelled one
            # and the next one runs as usual
            await peer.request(7, "wait")
            while 7 not in handler.gates:
                await asyncio.sleep(0)
            handler.gates[7].set()
            reply, _ = await peer.until(7)
            assert reply.result == 7
    assert handler.ended == {rid: "answered" for rid in (1, 2, 3, 4, 5, 7)} | {6: "cancelled"}
    # each handler ran on one task for all its steps; the sequential ones shared hosts (no task each)
    assert all(len(tasks) == 1 for tasks in handler.tasks.values())
    if HOSTED:
        assert len({next(iter(handler.tasks[rid])) for rid in range(1, 5)}) <= 2
