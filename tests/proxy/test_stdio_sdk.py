"""The official MCP SDK client through `mcpframe proxy --` in front of examples/everything.py, both eras."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import child_env

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


def _params() -> StdioServerParameters:
    env = child_env()
    env["PYTHONPATH"] += f":{ROOT}"
    serve = [sys.executable, "-m", "mcpframe", "serve", "examples.everything:server"]
    args = ["-m", "mcpframe", "proxy", "--", *serve]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_official_client_through_the_proxy() -> None:
    logs: list[Any] = []
    progress: list[float] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = types.TextContent(type="text", text="sampled!")
        return types.CreateMessageResult(role="assistant", content=content, model="sdk")

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    with anyio.fail_after(60):
        async with (
            stdio_client(_params()) as (read, write),
            ClientSession(read, write, logging_callback=on_log, sampling_callback=on_sample) as client,
        ):
            init = await client.initialize()
            assert init.server_info.name == "mcpframe-everything"
            assert init.protocol_version == "2025-11-25"
            assert len((await client.list_tools()).tools) == 14
            sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
            assert sampled.content[0].text == "LLM response: sampled!"  # type: ignore[union-attr]
            await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            assert progress == [0, 50, 100]
            await client.set_logging_level("debug")
            await client.call_tool("test_tool_with_logging", {})
            read_text = await client.read_resource("test://static-text")
            assert read_text.contents[0].text.startswith("This is the content")  # type: ignore[union-attr]
            assert len((await client.list_prompts()).prompts) == 4
            await client.send_ping()
    assert len(logs) == 3


async def test_official_client_modern_era_through_the_proxy() -> None:
    with anyio.fail_after(60):
        async with stdio_client(_params()) as (read, write), ClientSession(read, write) as client:
            discovered = await client.discover()
            assert discovered.supported_versions[0] == "2026-07-28"
            assert len((await client.list_tools()).tools) == 14
            text = await client.call_tool("test_simple_text", {})
            assert text.content[0].text == "This is a simple text response for testing."  # type: ignore[union-attr]
