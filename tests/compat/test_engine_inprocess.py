"""The engine drop-in in one process: the start-up report, lifespan and notifications in memory, HTTP."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import mcp_types as types
from mcp import Client as SDKClient
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel.server import Server as LowLevelServer
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from tests.compat._support import needs_private_mcp

import mcpframe.compat
from mcpframe.client import Client
from mcpframe.compat.engine import EngineServer, UnsupportedFeatureError, engine_server
from mcpframe.session import JSONRPCError

from .engine_apps import app as test_app

pytestmark = pytest.mark.anyio


class Verifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        return None


def awkward_app() -> MCPServer:
    """An app with every piece the engine cannot carry over as it is."""
    auth = AuthSettings(
        issuer_url="https://auth.example",
        resource_server_url="http://127.0.0.1:9/mcp",
        validate_token_resource=True,
    )
    app = MCPServer("awkward", auth=auth, token_verifier=Verifier())

    @app.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def audit(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    app.middleware.append(audit)

    async def my_ping(ctx: Any, params: Any) -> dict[str, Any]:
        return {}

    app._lowlevel_server.add_request_handler("ping", type(None), my_ping)  # type: ignore[arg-type]
    return app


@needs_private_mcp
def test_startup_report_lists_every_piece_not_carried_over(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mcpframe.compat.engine"):
        server = engine_server(awkward_app(), transport="http")
    assert server.report is not None
    pieces = [item.piece for item in server.report.items]
    assert pieces == [
        "auth",
        "custom HTTP routes",
        "server middleware",
        "ping handler",
        "HTTP request details",
    ]
    assert [item.piece for item in server.report.warnings] == pieces[:-1]
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1  # one warning naming every piece
    text = warnings[0].getMessage()
    for piece in pieces:
        assert piece in text
    assert "/health" in text
    assert "audit" in text


def test_strict_refuses_what_cannot_be_carried_over() -> None:
    with pytest.raises(UnsupportedFeatureError) as raised:
        engine_server(awkward_app(), strict=True, transport="stdio")
    pieces = [item.piece for item in raised.value.report.items]
    assert "auth" in pieces
    assert "custom HTTP routes" not in pieces  # routes only matter over HTTP
    assert "auth" in str(raised.value)


def test_a_plain_app_is_carried_over_whole(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mcpframe.compat.engine"):
        server = engine_server(test_app, strict=True)
    assert isinstance(server, EngineServer)
    assert server.report is not None
    assert server.report.items == ()
    assert not caplog.records
    assert server.capabilities()["tools"] == {"listChanged": False}


def lifespan_app(events: list[str]) -> MCPServer:
    @asynccontextmanager
    async def lifespan(app: MCPServer) -> AsyncIterator[dict[str, str]]:
        events.append("start")
        yield {"db": "connected"}
        events.append("stop")

    app = MCPServer("life", lifespan=lifespan)

    @app.tool()
    async def state(ctx: Context) -> str:
        """What the lifespan yielded."""
        await ctx.report_progress(1, 2, "half")
        return str(ctx.request_context.lifespan_context["db"])

    @app.tool()
    async def announce(ctx: Context) -> str:
        """Tell listening clients the tool list changed."""
        await ctx.notify_tools_changed()
        return "sent"

    return app


@pytest.mark.parametrize(("mode", "era"), [("auto", "modern"), ("legacy", "legacy")])
async def test_lifespan_context_and_progress_in_memory(mode: Any, era: str) -> None:
    events: list[str] = []
    progress: list[tuple[float, float | None, str | None]] = []
    server = engine_server(lifespan_app(events))
    with anyio.fail_after(10):
        async with Client(server, mode=mode) as client:
            assert client.era == era
            reported = anyio.Event()

            def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append((value, total, message))
                reported.set()

            result = await client.call_tool("state", {}, on_progress=on_progress)
            assert result["content"] == [{"type": "text", "text": "connected"}]
            assert result["structuredContent"] == {"result": "connected"}
            await reported.wait()  # progress callbacks run in the client's notification task
            assert progress == [(1, 2, "half")]
            assert events == ["start"]
    assert events == ["start", "stop"]


@needs_private_mcp
async def test_sdk_bus_notifications_reach_listening_clients() -> None:
    server = engine_server(lifespan_app([]))
    changed = anyio.Event()

    def on_note(method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            changed.set()

    with anyio.fail_after(10):
        async with Client(server, notification_handler=on_note) as client:
            assert client.era == "modern"
            async with client.listen(tools=True):
                result = await client.call_tool("announce", {})
                assert result["content"][0]["text"] == "sent"
                await changed.wait()


async def test_streamable_http_with_the_sdk_client() -> None:
    urls: list[str] = []
    ready = anyio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: mcpframe.compat.serve_async(test_app, "http", port=0, ready=on_ready))
            await ready.wait()
            for mode in ("auto", "legacy"):
                async with SDKClient(urls[0], mode=mode) as client:
                    expected = "2026-07-28" if mode == "auto" else "2025-11-25"
                    assert client.protocol_version == expected
                    echoed = await client.call_tool("echo", {"text": "over http"})
                    assert echoed.content[0].text == "over http"  # type: ignore[union-attr]
                    point = await client.call_tool("point", {"x": 3})
                    assert point.structured_content == {"x": 3, "y": 2}
                    item = await client.read_resource("res://items/q")
                    assert item.contents[0].text == "item q"  # type: ignore[union-attr]
                    prompt = await client.get_prompt("greet", {"name": "Ada"})
                    assert prompt.messages[0].content.text == "Hello, Ada! (plain)"  # type: ignore[union-attr]
            tg.cancel_scope.cancel()


def worker_app(events: list[str]) -> MCPServer:
    app = MCPServer("workers")

    @app.tool()
    def block(seconds: float) -> str:
        """A blocking sync tool: runs on a worker thread, never on the event loop."""
        time.sleep(seconds)
        events.append("block done")
        return "blocked"

    @app.tool()
    def quick(text: str) -> str:
        """A quick sync tool."""
        events.append("quick done")
        return text

    @app.tool()
    async def sleepy(ctx: Context) -> str:
        """Waits until cancelled."""
        try:
            await anyio.sleep(30)
        finally:
            events.append("sleepy ended")
        return "woke"

    return app


async def test_sync_tools_run_off_the_event_loop_and_concurrently() -> None:
    events: list[str] = []
    app = worker_app(events)
    original = app._tool_manager.get_tool("block")
    server = engine_server(app)
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client, anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "block", {"seconds": 0.5})
            result = await client.call_tool("quick", {"text": "first"})
            assert result["content"][0]["text"] == "first"
            assert events == ["quick done"]  # the blocking call is still running on its thread
    assert events == ["quick done", "block done"]
    assert app._tool_manager.get_tool("block") is original  # the app's own Tool is back


async def test_a_cancelled_call_stops_its_handler_and_the_connection_goes_on() -> None:
    events: list[str] = []
    server = engine_server(worker_app(events))
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            with pytest.raises(TimeoutError):
                await client.call_tool("sleepy", {}, timeout=0.2)
            result = await client.call_tool("quick", {"text": "after"})
            assert result["content"][0]["text"] == "after"
            assert client.session.pending == 0
    assert "sleepy ended" in events


async def test_a_low_level_sdk_server_is_served_too(caplog: pytest.LogCaptureFixture) -> None:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="t", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])

    low = LowLevelServer("raw", on_list_tools=list_tools, on_call_tool=call_tool)
    with caplog.at_level(logging.INFO, logger="mcpframe.compat.engine"):
        server = engine_server(low, strict=True)
    assert not caplog.records
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            assert [tool["name"] for tool in await client.list_tools()] == ["t"]
            result = await client.call_tool("t", {})
            assert result["content"] == [{"type": "text", "text": "called t"}]
            with pytest.raises(JSONRPCError) as raised:
                await client.request("prompts/list", {})  # not offered: the SDK's own -32601
            assert (raised.value.code, raised.value.message, raised.value.data) == (
                -32601,
                "Method not found",
                "prompts/list",
            )


async def test_custom_methods_and_notification_handlers_are_carried_over() -> None:
    seen = anyio.Event()

    async def custom(ctx: Any, params: types.RequestParams) -> dict[str, Any]:
        return {"echo": ctx.method, "version": ctx.protocol_version}

    async def roots_changed(ctx: Any, params: Any) -> None:
        seen.set()

    app = MCPServer("custom")
    app._lowlevel_server.add_request_handler("custom/echo", types.RequestParams, custom)
    app._lowlevel_server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, roots_changed
    )
    server = engine_server(app, strict=True)
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            assert await client.request("custom/echo", {}) == {"echo": "custom/echo", "version": "2025-11-25"}
            await client.notify_roots_changed()
            await seen.wait()
        async with Client(server, mode="auto") as client:
            result = await client.request("custom/echo", {})
            assert result["echo"] == "custom/echo"
            assert result["version"] == "2026-07-28"
            assert result["resultType"] == "complete"
