"""The engine's short way for plain ``tools/call`` against the SDK kernel it stands for, in process.

Every call goes both ways on the same SDK server (``ServerRunner.on_request``, the SDK's own kernel, and
``_fast.plain_tool_call``) at every handshake-era revision; the answers (result dicts or protocol errors)
must be equal. The eligibility rules are checked to refuse what the short way does not cover.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.server.connection import Connection
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.runner import ServerRunner
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent
from mcp_types.version import LATEST_MODERN_VERSION
from pydantic import BaseModel
from tests.compat._support import needs_private_mcp

from mcpframe.compat.engine import _fast
from mcpframe.compat.engine._server import _Kernel

pytestmark = pytest.mark.anyio

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


class Point(BaseModel):
    x: int
    y: int = 2


def build_app() -> MCPServer:
    app = MCPServer("fast-test")

    @app.tool()
    def echo(text: str) -> str:
        return text

    @app.tool()
    async def add(a: float, b: float) -> float:
        return a + b

    @app.tool()
    def point(x: int, y: int = 2) -> Point:
        return Point(x=x, y=y)

    @app.tool()
    def listing(n: int) -> list[int]:
        return list(range(n))

    @app.tool(structured_output=False)
    def plain(n: int) -> dict[str, int]:
        return {"n": n}

    add_failing_tools(app)
    return app


def add_failing_tools(app: MCPServer) -> None:
    @app.tool()
    def refuse(message: str) -> str:
        raise ToolError(message)

    @app.tool()
    def crash() -> str:
        raise RuntimeError("secret detail")

    @app.tool()
    async def protocol() -> str:
        raise MCPError(code=-32042, message="nope", data={"why": 1})

    @app.tool()
    def made() -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="own")], is_error=True)

    @app.tool()
    async def with_context(ctx: Context) -> str:
        return "ctx"


CALLS: list[dict[str, Any]] = [
    {"name": "echo", "arguments": {"text": "h\u00e9llo"}},
    {"name": "add", "arguments": {"a": 1.5, "b": 2}},
    {"name": "add", "arguments": {"a": "1", "b": "2"}},
    {"name": "point", "arguments": {"x": 1}},
    {"name": "point", "arguments": {"x": "1", "y": 5}},
    {"name": "point", "arguments": {"x": "not a number"}},
    {"name": "point"},
    {"name": "listing", "arguments": {"n": 3}},
    {"name": "listing", "arguments": {"n": "[1]"}},
    {"name": "plain", "arguments": {"n": 4}},
    {"name": "refuse", "arguments": {"message": "no"}},
    {"name": "crash", "arguments": {}},
    {"name": "protocol", "arguments": {}},
    {"name": "made", "arguments": {}},
    {"name": "no-such-tool", "arguments": {}},
    {"name": "echo", "arguments": {"text": "x", "extra": [1, None]}},
]


class Dispatch:
    """The little of a dispatch context the SDK kernel reads."""

    request_id = 1
    message_metadata = None
    can_send_request = False
    transport = None


def runner_for(app: MCPServer, version: str) -> ServerRunner[Any]:
    connection = Connection(Dispatch(), protocol_version=version)  # type: ignore[arg-type]
    connection.initialized.set()
    return ServerRunner(_Kernel(app._lowlevel_server), connection, None)  # type: ignore[arg-type]


async def answer(call: Any) -> Any:
    try:
        return await call
    except MCPError as exc:
        return ("error", exc.error.code, exc.error.message, exc.error.data)


@needs_private_mcp
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("params", CALLS, ids=lambda p: f"{p['name']}-{p.get('arguments')}")
async def test_short_way_answers_as_the_kernel(version: str, params: dict[str, Any]) -> None:
    app = build_app()
    runner = runner_for(app, version)
    assert _fast.eligible(runner, app, params)
    expected = await answer(runner.on_request(Dispatch(), "tools/call", dict(params)))  # type: ignore[arg-type]
    got = await answer(_fast.plain_tool_call(runner, app, Dispatch, dict(params)))
    assert got == expected


async def test_short_way_covers_what_it_claims() -> None:
    app = build_app()
    runner = runner_for(app, "2025-06-18")
    got = await _fast.plain_tool_call(runner, app, Dispatch, {"name": "point", "arguments": {"x": 3}})
    assert got["structuredContent"] == {"x": 3, "y": 2}
    crashed = await _fast.plain_tool_call(runner, app, Dispatch, {"name": "crash", "arguments": {}})
    assert crashed["isError"] is True
    assert "secret" not in crashed["content"][0]["text"]


def refusals(app: MCPServer) -> dict[str, bool]:
    runner = runner_for(app, "2025-06-18")
    plain = {"name": "echo", "arguments": {"text": "x"}}
    return {
        "plain": _fast.eligible(runner, app, plain),
        "meta": _fast.eligible(runner, app, {**plain, "_meta": {"progressToken": 1}}),
        "state": _fast.eligible(runner, app, {**plain, "requestState": "s"}),
        "null arguments": _fast.eligible(runner, app, {"name": "echo", "arguments": None}),
        "name not text": _fast.eligible(runner, app, {"name": 3}),
        "context tool": _fast.eligible(runner, app, {"name": "with_context", "arguments": {}}),
        "modern": _fast.eligible(runner_for(app, LATEST_MODERN_VERSION), app, plain),
    }


@needs_private_mcp
async def test_eligibility_refuses_what_needs_the_kernel() -> None:
    app = build_app()
    assert refusals(app) == {
        "plain": True,
        "meta": False,
        "state": False,
        "null arguments": False,
        "name not text": False,
        "context tool": False,
        "modern": False,
    }


async def test_custom_middleware_or_handler_turns_the_short_way_off() -> None:
    plain = {"name": "echo", "arguments": {"text": "x"}}
    app = build_app()

    async def watch(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    app._lowlevel_server.middleware.append(watch)
    assert not _fast.eligible(runner_for(app, "2025-06-18"), app, plain)

    other = build_app()

    async def mine(ctx: Any, params: Any) -> CallToolResult:
        return CallToolResult(content=[])

    other._lowlevel_server.add_request_handler("tools/call", type(plain), mine)  # type: ignore[arg-type]
    assert not _fast.eligible(runner_for(other, "2025-06-18"), other, plain)

    hinted = build_app()
    hinted._lowlevel_server.cache_hints["tools/call"] = object()  # type: ignore[assignment]
    assert not _fast.eligible(runner_for(hinted, "2025-06-18"), hinted, plain)
