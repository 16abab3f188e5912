"""Sync resources, resource templates and prompts of an ``MCPServer`` run on the engine's worker pool.

The SDK runs them with ``anyio.to_thread``; while the engine serves, their registry entries are copies
whose function hands the call to mcpframe's pool, and the app's own entries come back afterwards.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.server.mcpserver import Context, MCPServer

from mcpframe._threads import POOLED
from mcpframe.client import Client
from mcpframe.compat.engine import engine_server

pytestmark = pytest.mark.anyio

needs_pool = pytest.mark.skipif(
    not POOLED,
    reason="mcpframe's own worker threads are the private path; without it calls take anyio.to_thread",
)


def here() -> str:
    return threading.current_thread().name


def thread_app() -> MCPServer:
    app = MCPServer("threads")

    @app.resource("res://sync")
    def sync_resource() -> str:
        return here()

    @app.resource("res://async")
    async def async_resource() -> str:
        return here()

    @app.resource("res://items/{name}")
    def sync_template(name: str, ctx: Context) -> str:
        assert ctx.request_id is not None  # the context still reaches a pooled function
        return f"{name}@{here()}"

    @app.prompt()
    def sync_prompt(topic: str) -> str:
        return f"{topic}@{here()}"

    @app.tool()
    def sync_tool() -> str:
        return here()

    return app


def registries(app: MCPServer) -> list[Any]:
    return [
        *app._resource_manager._resources.values(),
        *app._resource_manager._templates.values(),
        *app._prompt_manager._prompts.values(),
        *app._tool_manager._tools.values(),
    ]


@pytest.mark.parametrize("mode", ["legacy", "modern"])
@needs_pool
async def test_sync_functions_run_on_the_pool_and_the_apps_entries_come_back(mode: Any) -> None:
    app = thread_app()
    before = registries(app)
    with anyio.fail_after(10):
        async with Client(engine_server(app), mode=mode) as client:
            [sync] = await client.read_resource("res://sync")
            [asynchronous] = await client.read_resource("res://async")
            [item] = await client.read_resource("res://items/box")
            prompt = await client.get_prompt("sync_prompt", {"topic": "t"})
            tool = await client.call_tool("sync_tool", {})
    assert sync["text"].startswith("mcpframe-worker")
    assert asynchronous["text"] == threading.current_thread().name  # async functions stay on the loop
    assert item["text"].startswith("box@mcpframe-worker")
    assert prompt["messages"][0]["content"]["text"].startswith("t@mcpframe-worker")
    assert tool["content"][0]["text"].startswith("mcpframe-worker")
    after = registries(app)
    assert len(after) == len(before)
    assert all(a is b for a, b in zip(after, before, strict=True))


async def test_without_a_pool_the_sdk_threads_are_kept() -> None:
    app = thread_app()
    with anyio.fail_after(10):
        async with Client(engine_server(app, thread_pool=False), mode="legacy") as client:
            [sync] = await client.read_resource("res://sync")
    assert not sync["text"].startswith("mcpframe-worker")
    assert sync["text"] != threading.current_thread().name  # still off the loop: anyio's worker
