"""Helpers for the lean server's SSE tests (`test_sse_wire_hold.py`, `test_sse_handover.py`): tools that
answer at once, on the worker pool or once a gate opens, served by the lean HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx

from mcpframe.http.server import HttpOptions, StreamableHTTPServer, serve_http
from mcpframe.server import Context, Server

from ._server_support import JSON_AND_SSE
from ._server_support import session_headers as headers_of


class Tools:
    """A `def` tool, an `async def` one that answers in its first step, and tools that wait on a gate the
    test opens (counting cancellations)."""

    def __init__(self) -> None:
        self.server = Server("sse-hold", version="1.0.0")
        self.entered = anyio.Event()
        self.gate = anyio.Event()
        self.cancelled = 0
        tools = self

        @self.server.tool
        def echo(text: str) -> str:
            """On the worker pool: its answer comes a few loop turns after the POST started."""
            return text

        @self.server.tool
        async def aecho(text: str) -> str:
            """Answers in its first step (nothing to wait for)."""
            return text

        @self.server.tool
        async def hold(text: str) -> str:
            """Suspends until the test opens the gate."""
            tools.entered.set()
            try:
                await tools.gate.wait()
            except BaseException:
                tools.cancelled += 1
                raise
            return text

        @self.server.tool
        async def note(ctx: Context) -> str:
            """Suspends, logs, then waits for the gate."""
            await anyio.sleep(0)
            await ctx.info("before")
            await tools.gate.wait()
            return "noted"


@contextlib.asynccontextmanager
async def serving(tools: Tools, **options: Any) -> AsyncIterator[tuple[str, StreamableHTTPServer]]:
    """`tools` on the lean server on 127.0.0.1; yields (URL, the app)."""
    opts = HttpOptions(**options)
    app = StreamableHTTPServer(tools.server, opts)
    ready: list[str] = []
    started = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        started.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: serve_http(
                tools.server,
                port=0,
                options=opts,
                ready=on_ready,
                http_server="mcpframe",
                app=app,  # type: ignore[arg-type]
            )
        )
        with anyio.fail_after(10):
            await started.wait()
        try:
            yield ready[0], app
        finally:
            tg.cancel_scope.cancel()


async def open_session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    """`initialize` and `notifications/initialized` at 2025-11-25; the session's request headers."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    response = await client.post(url, json=body, headers=JSON_AND_SSE)
    assert response.status_code == 200, response.text
    headers = headers_of(response.headers["mcp-session-id"], "2025-11-25")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, json=note, headers=headers)).status_code == 202
    return headers


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until `condition()` holds (bounded by the caller's fail_after)."""
    while not condition():
        await anyio.sleep(0)
