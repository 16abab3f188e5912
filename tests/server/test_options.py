"""The server's typed options: `serve(session_options=...)` and `Context.sample`'s keywords on the wire."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.server import Context, Server
from mcpframe.session import SessionOptions
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio


async def test_serve_hands_its_session_options_to_the_session() -> None:
    """A frame longer than the served `max_frame` is refused as oversize; a short one is answered."""
    server = Server("demo")
    near, far = memory_pair()
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    padded = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"' + b"x" * 200 + b'"}}\n'
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.serve(far, session_options=SessionOptions(max_frame=100)))
            await near.send(ping + padded)
            answers: list[Any] = []
            while len(answers) < 2:
                chunk = await near.receive()
                answers.extend(json.loads(line) for line in chunk.splitlines() if line.strip())
            await near.aclose()
    # Matched by content, not by position: the refusal is written as the frame is read, the ping's answer
    # when its handler runs; with the eager start (asyncio's private names) that is before the next frame is
    # read, without it (MCPFRAME_PUBLIC_ONLY on 3.11) after. JSON-RPC leaves the order of answers open.
    answered = [a for a in answers if "result" in a]
    refused = [a for a in answers if "error" in a]
    assert answered == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    assert len(refused) == 1
    assert refused[0]["id"] == 2  # refused unread, but its first bytes show its id (session/batch.py)
    assert refused[0]["error"]["code"] == jsonrpc.INVALID_REQUEST
    assert "maximum size of 100 bytes" in refused[0]["error"]["message"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sample_keywords_become_the_request_fields(mode: Any) -> None:
    """Given keywords are sent by their wire names, omitted ones not at all; `extra` adds fields verbatim."""
    server = Server("demo")

    @server.tool
    async def ask(ctx: Context) -> str:
        await ctx.sample(
            [{"role": "user", "content": {"type": "text", "text": "q"}}],
            max_tokens=5,
            system_prompt="be brief",
            temperature=0.5,
            stop_sequences=("\n",),
            extra={"tools": []},
        )
        await ctx.sample([], max_tokens=1)
        return "asked"

    seen: list[dict[str, Any]] = []

    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "a"}, "model": "m"}

    with anyio.fail_after(10):
        async with Client(server, mode=mode, sampling_handler=sampling) as client:
            result = await client.call_tool("ask")
    assert result["content"] == [{"type": "text", "text": "asked"}]
    assert seen[0] == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
        "maxTokens": 5,
        "systemPrompt": "be brief",
        "temperature": 0.5,
        "stopSequences": ["\n"],
        "tools": [],
    }
    assert seen[-1] == {"messages": [], "maxTokens": 1}
