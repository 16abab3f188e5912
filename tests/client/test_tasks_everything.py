"""The client's tasks against the TypeScript reference server's `simulate-research-query` (required tasks).

The tool runs four one-second stages; asked with ``ambiguous: true`` it elicits a clarification while the task
is ``input_required`` and delivers that request while the client waits in ``tasks/result``. Both runs share
one server process and overlap, so the test takes about four seconds.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpframe import jsonrpc, protocol
from mcpframe.client import Client, TaskHandle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / ".cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

if not ENTRY.exists() or shutil.which("node") is None:
    _why = f"server-everything is not installed at {ENTRY}: run `bash scripts/install-test-peers.sh`"
    if os.environ.get("CI"):
        raise RuntimeError(_why)  # in CI a missing peer is a failure, never a silent skip
    pytest.skip(_why, allow_module_level=True)

TOOL = "simulate-research-query"


def text_of(result: dict[str, Any]) -> str:
    return "".join(item.get("text", "") for item in result["content"])


async def test_simulate_research_query_as_a_task() -> None:
    asked: list[dict[str, Any]] = []
    statuses: list[tuple[str, str]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"interpretation": "snake"}}

    client = Client.stdio("node", [str(ENTRY), "stdio"], timeout=30, elicitation_handler=elicit)
    with anyio.fail_after(30):
        async with client:
            assert client.era == "legacy"
            assert "call" in client.server_capabilities["tasks"]["requests"]["tools"]
            tools = await client.list_tools()
            while TOOL not in {tool["name"] for tool in tools}:  # registered once initialized
                tools = await client.list_tools()
            tool = next(tool for tool in tools if tool["name"] == TOOL)
            assert tool["execution"]["taskSupport"] == "required"
            # The TypeScript SDK reports the spec's -32601 inside an isError result, not as an error.
            plain = await client.call_tool(TOOL, {"topic": "tides"})
            assert plain.get("isError") is True
            assert str(jsonrpc.METHOD_NOT_FOUND) in text_of(plain)

            client.tasks.on_status = lambda task: statuses.append((task["taskId"], task["status"]))
            clear = await client.call_tool(TOOL, {"topic": "tides"}, ttl=60_000)
            vague = await client.call_tool(TOOL, {"topic": "python", "ambiguous": True}, task=True)
            doomed = await client.call_tool(TOOL, {"topic": "doomed"}, task=True)
            assert isinstance(clear, TaskHandle)
            assert clear.task_id is not None
            assert clear.status == "working"
            assert clear.task["pollInterval"] == 1000

            cancelled = await doomed.cancel()
            assert cancelled["status"] == "cancelled"
            listed = {task["taskId"]: task["status"] for task in await client.list_tasks()}
            assert listed[doomed.task_id or ""] == "cancelled"
            assert listed[clear.task_id] in {"working", "completed"}

            results: dict[str, dict[str, Any]] = {}

            async def finish(name: str, handle: TaskHandle) -> None:
                results[name] = await handle.result()

            async with anyio.create_task_group() as tg:
                tg.start_soon(finish, "clear", clear)
                tg.start_soon(finish, "vague", vague)

    assert "Research Report: tides" in text_of(results["clear"])
    assert results["clear"]["_meta"][protocol.RELATED_TASK_KEY] == {"taskId": clear.task_id}
    assert "python (snake)" in text_of(results["vague"])
    assert len(asked) == 1
    assert asked[0]["_meta"][protocol.RELATED_TASK_KEY] == {"taskId": vague.task_id}
    # server-everything announces every change: the client saw the ambiguous one wait for input
    assert (vague.task_id, "input_required") in statuses
    assert (clear.task_id, "completed") in statuses
