"""The official MCP SDK client (2.3.0) against an mcpframe server with task tools, over stdio.

The SDK client has the 2025-11-25 task types but no way to make a task-augmented call, so this proves what it
can see: the `tasks` capability and `execution.taskSupport` parse, an optional tool is called directly, and a
required one is refused with the specification's -32601.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

import mcpframe
from mcpframe import jsonrpc
from mcpframe.server import Server

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]

server = Server("tasks-sdk")
"""Served by the child: `mcpframe serve tests.server.test_tasks_sdk:server`."""


@server.tool(task_support="optional")
async def double(x: int) -> str:
    "Twice x."
    return str(2 * x)


@server.tool(task_support="required")
async def only_as_task() -> str:
    "Runs only as a task."
    return "never directly"


def _params() -> StdioServerParameters:
    env = dict(os.environ)
    package_root = str(Path(mcpframe.__file__).absolute().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, str(ROOT), env.get("PYTHONPATH")]))
    args = ["-m", "mcpframe", "serve", "tests.server.test_tasks_sdk:server"]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))


async def test_official_client_sees_task_tools() -> None:
    with anyio.fail_after(60):
        async with stdio_client(_params()) as (read, write), ClientSession(read, write) as client:
            init = await client.initialize()
            tasks = init.capabilities.tasks
            assert tasks is not None
            assert tasks.requests is not None
            assert tasks.requests.tools is not None
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert tools["double"].execution is not None
            assert tools["double"].execution.task_support == "optional"
            assert tools["only_as_task"].execution is not None
            assert tools["only_as_task"].execution.task_support == "required"
            result = await client.call_tool("double", {"x": 3})
            assert result.content[0].text == "6"  # type: ignore[union-attr]
            with pytest.raises(MCPError) as refused:
                await client.call_tool("only_as_task", {})
            assert refused.value.code == jsonrpc.METHOD_NOT_FOUND
