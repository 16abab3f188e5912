"""A 2026-07-28 (stateless) request whose client closes its connection while the handler runs: the
disconnect IS the request's cancellation (the spec's MUST: no `notifications/cancelled` is sent or
expected), on both HTTP servers, for a JSON answer's wait and for an SSE answer, for an `async def` tool
that suspended after its eager first step and for a `def` tool on its worker thread. The handler is
cancelled once, nothing is logged at WARNING or above, and the server goes on serving.

No test here waits for time to pass: the tools wait on gates, and the test waits (within a generous bound)
for the event a tool sets when it sees its cancellation.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.server import Context, Server

from ._fast_support import record_fast_posts
from ._live_support import live_app, until
from ._server_support import JSON_AND_SSE, MODERN, call, messages, modern_meta, raw_post

pytestmark = pytest.mark.anyio

ANSWERS = {
    "json": {"response_mode": "auto", "stream_after": 60.0},  # the POST waits for its JSON answer
    "sse": {"response_mode": "sse"},  # an SSE answer (a modern stream is never resumable)
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tools:
    """`hold` (suspends on a gate) and `waits` (a `def` tool watching `Context.is_cancelled`), each
    counting how its runs ended and setting `gone` when it saw its cancellation."""

    def __init__(self) -> None:
        self.server = Server("modern-disconnect", version="1.0.0")
        self.entered = anyio.Event()
        self.gate = anyio.Event()
        self.gone = anyio.Event()
        self.started = threading.Event()
        self.release = threading.Event()
        self.cancelled = 0
        self.finished = 0
        tools = self
        loop = asyncio.get_running_loop()

        @self.server.tool
        async def hold(text: str) -> str:
            """Suspends until the test opens the gate."""
            tools.entered.set()
            try:
                await tools.gate.wait()
            except anyio.get_cancelled_exc_class():
                tools.cancelled += 1
                tools.gone.set()
                raise
            tools.finished += 1
            return text

        @self.server.tool
        def waits(text: str, ctx: Context) -> str:
            """A `def` tool: on its worker thread until its request is cancelled."""
            tools.started.set()
            while not ctx.is_cancelled:
                if tools.release.wait(0.005):  # the test's way out if the cancel never comes
                    return text
            tools.cancelled += 1
            loop.call_soon_threadsafe(tools.gone.set)
            return text

    async def running(self, tool: str) -> None:
        """Until the tool's handler runs (suspended on its gate, or on its worker thread)."""
        if tool == "hold":
            await self.entered.wait()
        else:
            await until(self.started.is_set)


def _headers(tool: str) -> dict[str, str]:
    return {**JSON_AND_SSE, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": tool}


@pytest.mark.parametrize("tool", ["hold", "waits"])
@pytest.mark.parametrize("answer", ["json", "sse"])
@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_modern_client_that_disconnects_cancels_its_handler_once(
    http_server: str,
    answer: str,
    tool: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.WARNING)
    taken = record_fast_posts(monkeypatch, lambda got: type(got).__name__)
    tools = Tools()
    options: dict[str, Any] = ANSWERS[answer]
    async with (
        live_app(tools, http_server=http_server, **options) as (url, app),
        httpx.AsyncClient(timeout=10) as client,
    ):
        # a first call leaves an idle stateless lane in the pool: the lean server's fast path takes the next
        warm = await client.post(
            url, json=call("echo", {"text": "w"}, rid=1, **modern_meta()), headers=_headers("echo")
        )
        assert warm.status_code == 200
        host, port = url.split("/")[2].split(":")
        try:
            with anyio.fail_after(10):
                _reader, writer = await asyncio.open_connection(host, int(port))
                body = call(tool, {"text": "x"}, rid=7, **modern_meta())
                writer.write(raw_post(url, _headers(tool), body))
                await tools.running(tool)
                writer.close()
                await tools.gone.wait()  # the disconnect cancelled the handler
                await until(lambda: app.posts.admission.running == 0)
        finally:
            tools.release.set()
        assert (tools.cancelled, tools.finished) == (1, 0)
        if http_server == "mcpframe":  # the lean server's fast path took it (not the full path)
            assert taken[1] == ("_Abandoned" if answer == "json" else "SseWriter")
        # the server goes on serving, the same id included
        tools.gate.set()
        again = await client.post(
            url, json=call("hold", {"text": "on"}, rid=7, **modern_meta()), headers=_headers("hold")
        )
        got = (
            again.json() if again.headers["content-type"] == "application/json" else messages(again.text)[-1]
        )
        assert got["result"]["content"] == [{"type": "text", "text": "on"}]
        assert (tools.cancelled, tools.finished) == (1, 1)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
