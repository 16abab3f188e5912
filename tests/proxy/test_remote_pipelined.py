"""`mcpframe proxy URL` with a client that writes without waiting for answers (`printf ... | mcpframe proxy`):
its `notifications/initialized` and first calls reach the server inside the session, in order, and an
answer that comes after stdin ended is still written before the proxy exits (fast lane or not)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from tests._blocked import all_blocked
from tests.proxy._listen_support import SERVE_EVERYTHING, child_env, running
from tests.proxy._remote_support import SSE_HEAD, Server, Stdio, call, event, log, result

from mcpframe.http.client_fast import FastLane
from mcpframe.proxy.remote import proxy_remote, remote_transport

pytestmark = pytest.mark.anyio

INIT_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}
INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT_PARAMS}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class SessionServer(Server):
    """Refuses (400) whatever comes without its session (as `mcpframe serve --http` does), answers
    `initialize` once `release_init` is set and each tool call, with a log first, once `release_call` is."""

    def __init__(self) -> None:
        super().__init__(self.answer_call)
        self.release_init = anyio.Event()
        self.release_call = anyio.Event()
        self.called = anyio.Event()
        self.seen: list[Any] = []  # what was posted, in order (a method or an id)
        self.refused: list[Any] = []

    async def respond(
        self, verb: str, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter
    ) -> None:
        if verb == "POST":
            message = json.loads(body)
            name = message.get("method", message.get("id"))
            if message.get("method") == "initialize":
                self.seen.append(name)
                await self.release_init.wait()
            elif headers.get("mcp-session-id") != "s1":
                self.refused.append(name)
                writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                return
            else:
                self.seen.append(name)
        await super().respond(verb, headers, body, writer)

    async def answer_call(
        self, message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter
    ) -> None:
        self.called.set()
        await self.release_call.wait()
        writer.write(SSE_HEAD + event(log("working")))
        await writer.drain()
        writer.write(event(result(message["id"])) + b"0\r\n\r\n")


class StdoutStdio(Stdio):
    """`Stdio` whose writes yield to the event loop first, as a real stdout write does (`FdTransport`
    takes its write lock, then writes from a thread or when the pipe is writable)."""

    async def send(self, data: bytes) -> None:
        await anyio.lowlevel.checkpoint()
        await super().send(data)


async def run_proxy(server: SessionServer, lane: bool, script: Any) -> StdoutStdio:
    """Run the proxy to `server` until it ends on its own, `script(stdio)` driving the client side."""
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    stdio = StdoutStdio()
    try:
        async with remote_transport(f"http://127.0.0.1:{port}/mcp", {}) as remote:
            fast = FastLane(remote.streamable, max_open=8) if lane else None
            async with anyio.create_task_group() as tg:
                tg.start_soon(script, stdio)
                await proxy_remote(stdio, remote, lane=fast, drain_timeout=60)
    finally:
        listener.close()
    return stdio


@pytest.mark.parametrize("lane", [True, False], ids=["lane", "full"])
async def test_a_pipelined_handshake_waits_for_the_session(lane: bool) -> None:
    server = SessionServer()
    server.release_call.set()

    async def client(stdio: StdoutStdio) -> None:
        for message in (INITIALIZE, INITIALIZED, call(1)):
            await stdio.write(message)  # all before the answer to `initialize`
        await all_blocked()
        assert server.seen == ["initialize"]  # the others wait for the session
        server.release_init.set()
        await stdio.answer(1)
        stdio.input.close()

    with anyio.fail_after(20):
        stdio = await run_proxy(server, lane, client)
    assert server.refused == []
    assert server.seen == ["initialize", "notifications/initialized", "tools/call"]
    assert [m.get("id", m.get("method")) for m in stdio.out] == ["init", "notifications/message", 1]


@pytest.mark.parametrize("lane", [True, False], ids=["lane", "full"])
async def test_an_answer_after_the_end_of_stdin_is_written_before_the_exit(lane: bool) -> None:
    """The tool answers only once the client's stdin closed (and the proxy saw it): its log and its result
    both reach stdout before `proxy_remote` returns (the result was once counted answered before it was
    written, and the exit cut its write)."""
    server = SessionServer()
    server.release_init.set()

    async def client(stdio: StdoutStdio) -> None:
        await stdio.handshake({})
        await stdio.write(call(1))
        await server.called.wait()
        stdio.input.close()
        await all_blocked()  # the proxy read the end of its input and waits for the answer
        server.release_call.set()

    with anyio.fail_after(20):
        stdio = await run_proxy(server, lane, client)
    assert [m.get("id", m.get("method")) for m in stdio.out] == ["init", "notifications/message", 1]
    assert stdio.out[-1] == result(1)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with running([*SERVE_EVERYTHING, "--http", "--port", "0"]) as url:
        yield url


def test_printf_into_the_proxy_against_mcpframe_serve(server_url: str) -> None:
    """The newcomer's line: `printf '%s\\n' <initialize> <initialized> <tools/call> | mcpframe proxy URL`."""
    tool = {"name": "test_tool_with_logging", "arguments": {}}
    lines = [INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": tool}]
    done = subprocess.run(
        [sys.executable, "-m", "mcpframe", "proxy", server_url],
        input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
        check=False,
        capture_output=True,
        env=child_env(),
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert b"refused" not in done.stderr, done.stderr
    answers = {m.get("id"): m for m in map(json.loads, done.stdout.splitlines()) if "id" in m}
    assert answers["init"]["result"]["protocolVersion"] == "2025-11-25"
    assert "error" not in answers[2], answers[2]
    assert not answers[2]["result"].get("isError"), answers[2]
