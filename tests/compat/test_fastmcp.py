"""A FastMCP server (the ``fastmcp`` package, next to mcp 2.x) on the drop-in server transport."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("fastmcp")

from mcp import ClientSession
from mcp.client.stdio import stdio_client as sdk_stdio_client

from mcpframe.compat import mcp_sdk

from ._support import FASTMCP_SERVER, MiB, server_params, text_of

pytestmark = pytest.mark.anyio


async def session_results(server_mode: str, client: Any) -> dict[str, Any]:
    with anyio.fail_after(60):
        async with (
            client(server_params(server_mode, FASTMCP_SERVER)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            big = await session.call_tool("blob", {"size": 4 * MiB})
            assert text_of(big) == "x" * (4 * MiB)
            return {
                "tools": sorted(t.name for t in (await session.list_tools()).tools),
                "echo": (await session.call_tool("echo", {"text": "fast \u00e9"})).model_dump(),
                "static": (await session.read_resource("res://static")).model_dump(),
                "greet": (await session.get_prompt("greet", {"name": "Ada"})).model_dump(),
            }


async def test_fastmcp_server_on_the_dropin_matches_the_sdk_transport() -> None:
    reference = await session_results("sdk", sdk_stdio_client)
    assert reference["tools"] == ["blob", "echo"]
    assert reference["echo"]["content"][0]["text"] == "fast \u00e9"
    assert await session_results("dropin", sdk_stdio_client) == reference
    assert await session_results("dropin", mcp_sdk.stdio_client) == reference
