"""A `def` tool's `tools/call` read by the Session's own reader (stdio and the other byte pipes): it starts
in a task of its own (``Server.suspends``, ``Session._on_request``), so a cancel is never lost whenever it
comes, and pipelined calls all answer. A real Server on a memory pair, driven by raw frames.

Nothing here waits for time to pass: the tool waits on a gate the test opens, and the test waits on
conditions (bounded by ``anyio.fail_after``).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import anyio.lowlevel
import anyio.to_thread
import orjson
import pytest
from tests.session._support import RawPeer

from mcpframe.server import Context, Server
from mcpframe.session import Session, SessionOptions
from mcpframe.transports.memory import memory_pair

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tools:
    """A Server with two `def` tools; ``slow("hold")`` waits on ``gate`` in its worker thread."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.entered = threading.Event()  # set when ``slow("hold")`` is running
        self.gate = threading.Event()
        self.server = server = Server("stdio-suspends", version="1.0.0")

        @server.tool
        def slow(text: str) -> str:
            """A `def` tool."""
            self.ran.append(text)
            if text == "hold":
                self.entered.set()
                self.gate.wait(10)
            return text

        @server.tool
        def with_context(text: str, ctx: Context) -> str:
            """A `def` tool that takes a Context."""
            self.ran.append(text)
            return f"{text} for {ctx.request_id}"


def call(rid: int, text: str, tool: str = "slow") -> bytes:
    params = {"name": tool, "arguments": {"text": text}}
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}) + b"\n"


def cancel(rid: int) -> bytes:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
    return orjson.dumps(body) + b"\n"


def ping(rid: int) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}) + b"\n"


class Served(Protocol):
    """What ``serving`` serves: a Server, and the gate its waiting tools wait on (opened at the end)."""

    server: Server
    gate: threading.Event


@asynccontextmanager
async def serving(
    tools: Served, session_options: SessionOptions | None = None
) -> AsyncIterator[tuple[RawPeer, Session]]:
    """``tools.server`` serving one initialized connection (its Session with ``session_options``): the
    test's peer and the server's Session."""
    theirs, ours = memory_pair()
    peer = RawPeer(theirs)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: tools.server.serve(ours, session_options=session_options))
        with anyio.fail_after(10):
            info = {"name": "t", "version": "1"}
            await peer.request(
                0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
            )
            answer, _ = await peer.until(0)
            assert answer.kind == "result"
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        (connection,) = tools.server._connections
        session = connection.session
        assert session.suspends == tools.server.suspends
        try:
            yield peer, session
        finally:
            tools.gate.set()
            tg.cancel_scope.cancel()


async def settled(session: Session) -> None:
    """Wait until no request of ``session`` is in flight."""
    while session._incoming:
        await anyio.lowlevel.checkpoint()


async def answers_until_ping(peer: RawPeer, rid: int) -> list[Any]:
    """Send a ping and return what came before its answer (all of it was written before the ping's)."""
    await peer.send(ping(rid))
    answer, before = await peer.until(rid)
    assert (answer.kind, answer.result) == ("result", {})
    return before


async def test_a_cancel_in_the_same_chunk_means_the_tool_never_runs_and_nothing_answers() -> None:
    tools = Tools()
    async with serving(tools) as (peer, session):
        with anyio.fail_after(10):
            await peer.send(call(2, "never") + cancel(2))
            await settled(session)
            assert await answers_until_ping(peer, 90) == []
        assert tools.ran == []
        assert session._incoming == {}


async def test_a_cancel_while_the_tool_runs_in_its_worker_means_no_answer() -> None:
    tools = Tools()
    async with serving(tools) as (peer, session):
        with anyio.fail_after(10):
            await peer.send(call(3, "hold"))
            assert await anyio.to_thread.run_sync(tools.entered.wait, 10)
            assert 3 in session._incoming
            await peer.send(cancel(3))
            await settled(session)  # the call is abandoned while its thread still waits
            tools.gate.set()
            assert await answers_until_ping(peer, 91) == []
        assert tools.ran == ["hold"]
        assert session._incoming == {}


async def test_a_cancel_after_the_answer_is_ignored() -> None:
    tools = Tools()
    async with serving(tools) as (peer, session):
        with anyio.fail_after(10):
            await peer.send(call(4, "done"))
            answer, before = await peer.until(4)
            assert before == []
            assert answer.result["content"] == [{"type": "text", "text": "done"}]
            await peer.send(cancel(4))
            assert await answers_until_ping(peer, 92) == []
        assert session._incoming == {}


async def test_pipelined_def_calls_and_a_ping_in_one_chunk_all_answer() -> None:
    tools = Tools()
    async with serving(tools) as (peer, session):
        with anyio.fail_after(10):
            await peer.send(call(5, "a") + ping(6) + call(7, "c", "with_context"))
            got = {}
            while len(got) < 3:
                item = await peer.receive()
                assert item.kind == "result", item
                got[item.id] = item.result
            await settled(session)
        assert got[5]["content"] == [{"type": "text", "text": "a"}]
        assert got[6] == {}
        assert got[7]["content"] == [{"type": "text", "text": "c for 7"}]
        assert sorted(tools.ran) == ["a", "c"]
        assert session._incoming == {}
