"""The legacy HTTP+SSE transport (2024-11-05) on three instances sharing Redis: the GET `/sse` stays on the
instance that opened it, its POSTs land anywhere and are relayed to that instance."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import connect_sse

from .support import Instance, RoundRobin

pytestmark = pytest.mark.anyio


def sse_url(instance: Instance) -> str:
    """The instance's legacy stream (`/sse` beside its `/mcp`)."""
    return instance.url.rsplit("/", 1)[0] + "/sse"


async def test_a_legacy_session_is_served_whichever_instance_a_post_reaches(cluster: list[Instance]) -> None:
    progress: list[float] = []

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        text = params["messages"][0]["content"]["text"]
        return {"role": "assistant", "content": {"type": "text", "text": text.upper()}, "model": "m"}

    balancer = RoundRobin([i.port for i in cluster])
    async with (
        httpx.AsyncClient(transport=balancer, timeout=30) as http,
        connect_sse(sse_url(cluster[0]), http_client=http, sampling_handler=sample) as client,
    ):
        with anyio.fail_after(30):
            tools = {t["name"] for t in await client.list_tools()}
            assert "test_sampling" in tools
            result = await client.call_tool("test_simple_text")
            assert result["content"][0]["text"]
            await client.call_tool("test_tool_with_progress", on_progress=lambda p, t, m: progress.append(p))
            assert progress == [0, 50, 100]
            for n in range(3):  # the sampling answer's POST lands on another instance than the asker
                result = await client.call_tool("test_sampling", {"prompt": f"hi {n}"})
                assert result["content"][0]["text"] == f"LLM response: HI {n}"
    (get_port,) = {port for method, port in balancer.sent if method == "GET"}
    posts = [port for method, port in balancer.sent if method == "POST"]
    assert len(set(posts)) == 3  # every instance took some: two of three were relayed to the GET's
    assert sum(port != get_port for port in posts) >= len(posts) // 2


async def read_endpoint(lines: Any) -> str:
    """The `endpoint` event's data: where the session's POSTs go."""
    event = ""
    async for line in lines:
        if line.startswith("event:"):
            event = line.partition(":")[2].strip()
        elif line.startswith("data:") and event == "endpoint":
            return str(line.partition(":")[2].strip())
    raise AssertionError("the stream ended before its endpoint event")


async def post(http: httpx.AsyncClient, instance: Instance, endpoint: str, body: object) -> httpx.Response:
    base = instance.url.rsplit("/", 1)[0]
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await http.post(base + endpoint, content=content, headers={"content-type": "application/json"})


async def test_unknown_bad_and_ended_legacy_sessions_everywhere(cluster: list[Instance]) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            for instance in cluster:  # a session nobody holds
                missing = await post(http, instance, "/messages/?session_id=nobody", ping)
                assert missing.status_code == 404
            holder, other = cluster[0], cluster[1]
            headers = {"accept": "text/event-stream"}
            async with http.stream("GET", sse_url(holder), headers=headers) as stream:
                lines = stream.aiter_lines()  # kept: a dropped line iterator would close the stream
                endpoint = await read_endpoint(lines)
                bad = await post(http, other, endpoint, b"{not json")
                assert bad.status_code == 400
                assert bad.json()["error"]["code"] == -32700
                batch = await post(http, other, endpoint, [ping, ping])  # no batches before 2025-03-26
                assert batch.status_code == 400
                local = await post(http, holder, endpoint, [ping, ping])
                assert batch.json() == local.json()  # the relayed refusal is the local one
                assert (await post(http, other, endpoint, ping)).status_code == 202
            # the holder sees its client leave and unregisters the session: 404 from every instance
            while (await post(http, other, endpoint, ping)).status_code != 404:
                await anyio.sleep(0.05)  # polling for the holder's end, bounded by fail_after
            for instance in cluster:
                assert (await post(http, instance, endpoint, ping)).status_code == 404
