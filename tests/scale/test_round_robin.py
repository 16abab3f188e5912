"""Three instances sharing Redis, a client whose consecutive requests go to different instances."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.client import Client
from mcpframe.http import connect
from mcpframe.session import JSONRPCError

from .support import Instance, RoundRobin

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def balanced(cluster: list[Instance], **settings: Any) -> AsyncIterator[tuple[Client, RoundRobin]]:
    """A client of the cluster through a round-robin balancer."""
    balancer = RoundRobin([i.port for i in cluster])
    async with (
        httpx.AsyncClient(transport=balancer, timeout=30) as http,
        connect(cluster[0].url, transport="streamable-http", http_client=http, **settings) as client,
    ):
        yield client, balancer


async def test_everything_tools_through_round_robin_legacy(cluster: list[Instance]) -> None:
    logs: list[Any] = []
    progress: list[float] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async with balanced(cluster, mode="legacy", logging_handler=on_log) as (client, balancer):
        with anyio.fail_after(30):
            tools = {t["name"] for t in await client.list_tools()}
            assert {"test_simple_text", "tick", "touch_watched"} <= tools
            result = await client.call_tool("test_simple_text")
            assert result["content"][0]["text"]
            await client.call_tool("test_tool_with_progress", on_progress=lambda p, t, m: progress.append(p))
            assert progress == [0, 50, 100]
            await client.set_logging_level("info")
            await client.call_tool("test_tool_with_logging")
            assert len(logs) == 3
            await client.set_logging_level("error")  # saved in Redis: every instance now holds back info
            await client.call_tool("test_tool_with_logging")
            await client.call_tool("test_tool_with_logging")
            assert len(logs) == 3
            contents = await client.read_resource("test://static-text")
            assert contents
    posts = [port for method, port in balancer.sent if method == "POST"]
    assert len(set(posts)) == 3  # every instance answered some of them
    assert all(a != b for a, b in itertools.pairwise(posts))  # never twice in a row


async def test_sampling_and_elicitation_answered_through_another_instance(cluster: list[Instance]) -> None:
    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        text = params["messages"][0]["content"]["text"]
        return {"role": "assistant", "content": {"type": "text", "text": text.upper()}, "model": "m"}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}}

    settings: dict[str, Any] = {"mode": "legacy", "sampling_handler": sample, "elicitation_handler": elicit}
    async with balanced(cluster, **settings) as (client, balancer):
        with anyio.fail_after(30):
            for n in range(3):  # the answer's POST lands on the next instance: published to the asker
                result = await client.call_tool("test_sampling", {"prompt": f"hi {n}"})
                assert result["content"][0]["text"] == f"LLM response: HI {n}"
            result = await client.call_tool("test_elicitation", {"message": "who?"})
            assert "username': 'ada'" in result["content"][0]["text"]
    posts = [port for method, port in balancer.sent if method == "POST"]
    assert all(a != b for a, b in itertools.pairwise(posts))


async def test_a_task_is_followed_from_every_instance(cluster: list[Instance]) -> None:
    """A task runs on the instance its call reached; its status, its list entry and its result come from
    the others (the tasks live in Redis, scoped by the HTTP session id, which every instance knows)."""
    async with balanced(cluster, mode="legacy") as (client, balancer):
        with anyio.fail_after(30):
            handle = await client.call_tool("slow_square", {"x": 12, "ms": 300}, task=True)
            assert handle.task_id is not None
            listed = await client.list_tasks()
            assert [task["taskId"] for task in listed] == [handle.task_id]
            result = await handle.result()  # polls tasks/get round robin, then tasks/result
            assert result["content"][0]["text"] == "144"
            assert (await handle.refresh())["status"] == "completed"
            other = await client.call_tool("slow_square", {"x": 3, "ms": 300}, task=True)
            cancelled = await other.cancel()  # lands on another instance than the one running it
            assert cancelled["status"] == "cancelled"
            with pytest.raises(JSONRPCError):
                await other.result()
            # the running instance's handler was not interrupted (cooperative): once it has ended (its 300 ms
            # are long past after this wait, which only a negative needs), the task is still cancelled
            await anyio.sleep(1.0)
            assert (await other.refresh())["status"] == "cancelled"
    posts = [port for method, port in balancer.sent if method == "POST"]
    assert len(set(posts)) == 3
