"""An mcpframe server in a real child process on stdio: flow control and the batch rule.

The child serves a ``def`` tool (the worker pool), so its handlers are slower than its reader: without
back-pressure a pipelining client gets ``-32603 "Server busy"`` errors.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.session._support import RawPeer

from mcpframe import core, jsonrpc
from mcpframe.transports import spawn

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SERVER = """
from mcpframe.server import Server

server = Server("flow", version="1.0.0")


@server.tool
def echo(n: int) -> int:
    "Return n."
    return n


server.run()
"""


@asynccontextmanager
async def child(version: str) -> AsyncIterator[RawPeer]:
    """The child, initialized at ``version``, behind a raw peer."""
    path = [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in path if p)}
    transport = await spawn(sys.executable, ["-c", SERVER], env=env, stderr=subprocess.DEVNULL)
    try:
        peer = RawPeer(transport)
        params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        await peer.request(0, "initialize", params)
        answer = await peer.receive()
        assert answer.result["protocolVersion"] == version
        await peer.send(core.encode_notification("notifications/initialized"))
        yield peer
    finally:
        await transport.aclose()


def batch(*frames: bytes) -> bytes:
    return b"[" + b",".join(frame.rstrip(b"\n") for frame in frames) + b"]\n"


async def test_20000_pipelined_calls_to_a_def_tool_are_all_answered_with_results() -> None:
    total, chunk = 20_000, 1_000
    with anyio.fail_after(120):
        async with child("2025-06-18") as peer:

            async def write_all() -> None:
                for first in range(1, total + 1, chunk):
                    frames = (
                        core.encode_request(rid, "tools/call", {"name": "echo", "arguments": {"n": rid}})
                        for rid in range(first, first + chunk)
                    )
                    await peer.send(b"".join(frames))

            answers: dict[Any, Any] = {}
            async with anyio.create_task_group() as tg:
                tg.start_soon(write_all)
                while len(answers) < total:
                    item = await peer.receive()
                    answers[item.id] = item
    refused = [a.error for a in answers.values() if a.kind == "error"]
    assert refused == []
    assert sorted(answers) == list(range(1, total + 1))
    assert all(a.result["content"][0]["text"] == str(rid) for rid, a in answers.items())


async def test_a_batch_is_refused_at_2025_06_18_with_one_error() -> None:
    with anyio.fail_after(30):
        async with child("2025-06-18") as peer:
            await peer.send(batch(core.encode_request(1, "ping"), core.encode_request(2, "ping")))
            await peer.request(3, "ping")
            refusal, after = await peer.receive(), await peer.receive()
    assert refusal.kind == "error"
    assert refusal.id is None
    assert refusal.error == {
        "code": jsonrpc.INVALID_REQUEST,
        "message": "Invalid Request: batches are not supported",
    }
    assert (after.id, after.result) == (3, {})


async def test_a_batch_before_initialize_is_refused() -> None:
    path = [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in path if p)}
    with anyio.fail_after(30):
        transport = await spawn(sys.executable, ["-c", SERVER], env=env, stderr=subprocess.DEVNULL)
        try:
            peer = RawPeer(transport)
            await peer.send(batch(core.encode_request(1, "ping"), core.encode_request(2, "ping")))
            refusal = await peer.receive()
        finally:
            await transport.aclose()
    assert (refusal.id, refusal.error["code"]) == (None, jsonrpc.INVALID_REQUEST)


async def test_a_batch_is_answered_at_2025_03_26() -> None:
    with anyio.fail_after(30):
        async with child("2025-03-26") as peer:
            call = {"name": "echo", "arguments": {"n": 7}}
            await peer.send(batch(core.encode_request(1, "ping"), core.encode_request(2, "tools/call", call)))
            first, second = await peer.receive(), await peer.receive()
    assert (first.batch, second.batch) == (0, 1)  # one array: its elements
    answers = {first.id: first, second.id: second}
    assert answers[1].result == {}
    assert answers[2].result["content"][0]["text"] == "7"
