"""The last answer out is written when it is made: no flush is scheduled for a loop iteration later.

A handler that suspended (an `await`, a `def` tool's worker thread) answers from its task; when no other
request is in flight its answer is the whole write, so the Session hands it to the transport at once. A
flush scheduled as well would cost the server one more loop iteration per request for nothing (a stdio
server answering one call at a time paid it on every call).
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from mcpframe.client import Client
from mcpframe.server import Server
from mcpframe.session import outbox

pytestmark = pytest.mark.anyio


def _server() -> Server:
    server = Server("flush")

    @server.tool
    async def ayield(text: str) -> str:
        await asyncio.sleep(0)
        return text

    @server.tool
    def echo(text: str) -> str:
        return text

    return server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("tool", ["ayield", "echo"])
async def test_a_suspended_handler_s_answer_schedules_no_flush(
    tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheduled: Counter[int] = Counter()  # scheduled flushes run, by Outbox
    real = outbox.Outbox._scheduled_flush

    def counted(self: outbox.Outbox) -> None:
        scheduled[id(self)] += 1
        real(self)

    monkeypatch.setattr(outbox.Outbox, "_scheduled_flush", counted)
    async with Client(_server()) as client:
        scheduled.clear()
        for index in range(20):
            result = await client.call_tool(tool, {"text": str(index)})
            assert result["content"][0]["text"] == str(index)
    # the client's requests still go out at the end of their loop iteration (one Outbox, 20 flushes);
    # the server's answers, made last with nothing else in flight, were written at once
    assert list(scheduled.values()) == [20]
