"""A lane Session's outbox sits before its stream's SSE pipe: its mark is the pipe's (`SSE_HIGH_WATER`),
so a client that stops reading holds about two marks per stream (the outbox's and the pipe's), not the
Session's default 1 MiB plus the pipe's; `session_options` that set another mark keep it. No clock: the
test looks once the handler waits (its lane's outbox full), driven by the client not reading.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http.pipe import SSE_HIGH_WATER, MeteredPipe
from mcpframe.http.server import StreamableHTTPServer
from mcpframe.server import Context
from mcpframe.session import SessionOptions
from mcpframe.session.outbox import HIGH_WATER

from ._live_support import GatedTools, live_app, slow_client, until
from ._server_support import call, open_session

pytestmark = pytest.mark.anyio

LOG = 1000  # characters of each log message (a frame of about 1.1 KiB)
FRAME = 2 * 1024  # more than one log frame


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Flood(GatedTools):
    def __init__(self) -> None:
        super().__init__("flood")

        @self.server.tool
        async def flood(count: int, ctx: Context) -> str:
            """Log `count` messages of about 1 KiB, then answer."""
            for n in range(count):
                await ctx.info(f"{n:06d}" + "x" * LOG)
            return "done"


def _exchanges(app: StreamableHTTPServer) -> list[Any]:
    return [e for s in app.sessions.sessions.values() for e in s.router.exchanges.values()]


@pytest.mark.parametrize(
    ("session_options", "mark"),
    [
        (None, SSE_HIGH_WATER),
        (SessionOptions(max_in_flight=3), SSE_HIGH_WATER),  # options that leave the mark alone
        (SessionOptions(outbox_high_water=4 * HIGH_WATER), 4 * HIGH_WATER),
    ],
)
async def test_a_lanes_outbox_mark_is_the_sse_pipes_unless_set(
    session_options: SessionOptions | None, mark: int
) -> None:
    tools = _Flood()
    async with (
        live_app(tools, http_server="uvicorn", session_options=session_options) as (url, app),
        httpx.AsyncClient(timeout=10) as client,
    ):
        headers = await open_session(client, url)
        with anyio.fail_after(10):
            answered = await client.post(url, json=call("echo", {"text": "x"}), headers=headers)
        assert "x" in answered.text
        session = next(iter(app.sessions.sessions.values()))
        assert session.lanes is not None
        lane = session.lanes.acquire()
        assert lane.session.options.outbox_high_water == mark
        lane.done()


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_client_that_stops_reading_holds_about_two_marks_per_stream(http_server: str) -> None:
    tools = _Flood()
    async with live_app(tools, http_server=http_server) as (url, app):
        async with httpx.AsyncClient(timeout=10) as client:
            headers = await open_session(client, url)
        async with slow_client(url, headers) as slow:
            slow.post(call("flood", {"count": 4000}, rid=6))  # ~4.4 MiB of logs: far past every buffer
            with anyio.fail_after(20):
                await until(lambda: any(e.lane.session._outbox.full for e in _exchanges(app)))
            (exchange,) = _exchanges(app)
            assert exchange.lane.session._outbox.queued <= SSE_HIGH_WATER + FRAME
            pipe = exchange.stream._pipe
            if isinstance(
                pipe, MeteredPipe
            ):  # the full path's SSE pipe (the lean server writes to the socket)
                assert pipe.peak <= SSE_HIGH_WATER + FRAME
            text = await slow.read_until(b'"id":6', 1)  # reading again: the handler goes on to its answer
        assert b'"text":"done"' in text
        assert text.count(b"notifications/message") == 4000
