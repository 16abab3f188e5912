"""What a suspended handler's light JSON exchange (`fast_pending.Pending`) arms and undoes: the switch to SSE
is one entry on the `stream_after` timer its `PostHandler` keeps for the loop (`switch_after`), armed only
for a client that takes SSE, cancelled once the answer is in; the session's count of open requests goes
back down exactly once, whether the answer went straight out or a stream had to be made for it."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from mcpframe.http.deadlines import Deadlines

from ._fast_support import taken
from ._live_support import LateLogTools, serving, session_of, until
from ._server_support import call

__all__ = ["taken"]  # the fixture, used by name

pytestmark = pytest.mark.anyio

LONG = 60.0  # `stream_after`: far past any wait here, so every answer stays JSON unless a stream is needed


def _waiting(wait: float) -> list[Any]:
    """The running loop's `wait`-second deadlines still waiting."""
    deadlines = Deadlines.of(wait)
    return [entry for entry in deadlines._queue if entry[1] is not None]


@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "application/json"])
async def test_the_switch_deadline_is_armed_only_for_a_client_that_accepts_sse(
    accept: str, taken: list[str]
) -> None:
    tools = LateLogTools("pending-ends")
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = session_of(app, headers)
        taken.clear()
        with anyio.fail_after(10):
            body = call("hold", {"text": "x"}, rid=7)
            asked = asyncio.ensure_future(client.post(url, json=body, headers={**headers, "accept": accept}))
            await tools.entered.wait()
            assert session.open_requests == 1
            sse = "text/event-stream" in accept
            assert len(_waiting(LONG)) == (1 if sse else 0)
            if sse:  # the `PostHandler`'s timer for this loop, the one the entry is on
                loop, deadlines = app.posts.switch_after
                assert loop is asyncio.get_running_loop()
                assert deadlines is Deadlines.of(LONG)
            tools.gate.set()
            answer = await asked
            await until(lambda: session.open_requests == 0)
        assert answer.json()["result"]["content"] == [{"type": "text", "text": "x"}]
        assert taken == ["_Abandoned"]
        assert _waiting(LONG) == []  # cancelled with the answer
        for _ in range(5):
            await anyio.sleep(0)
        assert session.open_requests == 0  # counted down once


async def test_an_exchange_that_made_a_stream_counts_its_request_down_once(taken: list[str]) -> None:
    tools = LateLogTools("pending-ends")
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = session_of(app, headers)
        taken.clear()
        with anyio.fail_after(10):
            asked = asyncio.ensure_future(client.post(url, json=call("late_log", rid=8), headers=headers))
            await tools.entered.wait()
            assert session.open_requests == 1
            tools.gate.set()
            answer = await asked
            await until(lambda: session.open_requests == 0)
        assert "logged" in answer.text  # answered as SSE after its log, through the stream
        assert taken == ["_Abandoned"]
        for _ in range(5):
            await anyio.sleep(0)
        assert session.open_requests == 0
        assert _waiting(LONG) == []
