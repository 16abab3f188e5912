"""The client against the official SDK's server (mcp 2.3.0 MCPServer) over stdio, in both eras."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests._blocked import all_blocked

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("sdk_server.py")


def env() -> dict[str, str]:
    path = [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in path if p)}


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    assert "name" in params["requestedSchema"]["properties"]
    return {"action": "accept", "content": {"name": "Ada"}}


def sdk_client(mode: str) -> Client:
    return Client.stdio(
        sys.executable, [str(SERVER)], env=env(), mode=mode, elicitation_handler=elicit, timeout=30
    )


def text_of(result: dict[str, Any]) -> str:
    return "".join(item.get("text", "") for item in result["content"])


async def exercise(client: Client) -> None:
    assert client.server_info is not None
    assert client.server_info["name"] == "sdk-test-server"
    assert client.instructions == "for tests"
    assert "tools" in client.server_capabilities
    names = {tool["name"] for tool in await client.list_tools()}
    assert names == {"add", "count", "greet", "fail"}
    assert text_of(await client.call_tool("add", {"a": 2, "b": 40})) == "42"
    seen: list[tuple[float, float | None, str | None]] = []
    result = await client.call_tool("count", {"steps": 3}, on_progress=lambda p, t, m: seen.append((p, t, m)))
    assert text_of(result) == "counted 3"
    with anyio.fail_after(5):
        while len(seen) < 3:
            await all_blocked()
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert text_of(await client.call_tool("greet", {})) == "Hello, Ada!"
    failed = await client.call_tool("fail", {})
    assert failed["isError"] is True
    assert [r["uri"] for r in await client.list_resources()] == ["test://static"]
    assert [t["uriTemplate"] for t in await client.list_resource_templates()] == ["test://items/{item}"]
    contents = await client.read_resource("test://static")
    assert contents[0]["text"] == "static content"
    assert (await client.read_resource("test://items/7"))[0]["text"] == "item 7"
    assert [p["name"] for p in await client.list_prompts()] == ["review"]
    prompt = await client.get_prompt("review", {"code": "x = 1"})
    assert prompt["messages"][0]["content"]["text"] == "Please review: x = 1"
    await client.ping()
    assert client.session.pending == 0


async def test_sdk_server_modern_era() -> None:
    with anyio.fail_after(60):
        async with sdk_client("auto") as client:
            assert client.era == "modern"
            assert client.protocol_version == "2026-07-28"
            await exercise(client)


async def test_sdk_server_legacy_era() -> None:
    with anyio.fail_after(60):
        async with sdk_client("legacy") as client:
            assert client.era == "legacy"
            assert client.protocol_version == "2025-11-25"
            await exercise(client)
            with pytest.raises(JSONRPCError) as info:  # this server declares no logging capability
                await client.set_logging_level("debug")
            assert info.value.code == jsonrpc.METHOD_NOT_FOUND
