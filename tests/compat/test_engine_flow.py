"""The engine drop-in under a pipelining client: back-pressure, never ``Server busy``."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.server.mcpserver import MCPServer
from tests.session._support import RawPeer

from mcpframe import core
from mcpframe.compat.engine import engine_server
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio


def call(rid: int) -> bytes:
    return core.encode_request(rid, "tools/call", {"name": "echo", "arguments": {"n": rid}})


async def test_20000_pipelined_calls_to_a_sync_sdk_tool_are_all_answered() -> None:
    app = MCPServer("flow")

    @app.tool()
    def echo(n: int) -> int:
        return n

    server = engine_server(app)
    total, chunk = 20_000, 1_000
    left, right = memory_pair()
    peer = RawPeer(left)
    answers: dict[Any, Any] = {}
    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, right)
            params = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            }
            await peer.request(0, "initialize", params)
            assert (await peer.receive()).id == 0
            await peer.send(core.encode_notification("notifications/initialized"))

            async def write_all() -> None:
                for first in range(1, total + 1, chunk):
                    await peer.send(b"".join(call(rid) for rid in range(first, first + chunk)))

            tg.start_soon(write_all)
            while len(answers) < total:
                item = await peer.receive()
                answers[item.id] = item
            await left.aclose()
    assert [a.error for a in answers.values() if a.kind == "error"] == []
    assert sorted(answers) == list(range(1, total + 1))
    assert all(a.result["content"][0]["text"] == str(rid) for rid, a in answers.items())
