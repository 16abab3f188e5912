"""The lean HTTP/1.1 POST path of the Streamable HTTP client (`HttpClientOptions.lean`, `client_lean.py`).

A scripted raw-socket server says exactly which bytes go on the wire and when a connection closes: chunked
SSE answers split anywhere, keep-alive reuse, a server that drops an idle connection, an error status with
a body, a server that never answers a call the caller gave up on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.client import Client
from mcpframe.http import connect
from mcpframe.http.client_lean import LeanConnection, LeanPool
from mcpframe.http.options import HttpClientOptions
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio

LEAN = HttpClientOptions(lean=True, get_stream=False, terminate_on_close=False)

# What a scripted server does with one POST: bytes to write, None to close the connection unanswered, or
# HOLD to answer nothing until the client closes it.
HOLD = b""
Script = Callable[[dict[str, Any], int], Awaitable[bytes | None]]


def lean_client(url: str, timeout: float = 30.0) -> Client:
    return connect(url, transport="streamable-http", mode="legacy", http_options=LEAN, timeout=timeout)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the lean path runs on asyncio only


def head(status: str, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status}\r\n", *(f"{k}: {v}\r\n" for k, v in headers.items()), "\r\n"]
    return "".join(lines).encode()


def json_answer(body: dict[str, Any], status: str = "200 OK", **extra: str) -> bytes:
    data = json.dumps(body).encode()
    hdrs = {"content-type": "application/json", "content-length": str(len(data)), **extra}
    return head(status, hdrs) + data


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def sse_answer(message: dict[str, Any]) -> bytes:
    event = b"id: e-1\ndata: " + json.dumps(message).encode() + b"\n\n"
    hdrs = {"content-type": "text/event-stream", "transfer-encoding": "chunked", "mcp-session-id": "s-1"}
    return head("200 OK", hdrs) + chunked(b": primed\n\n", event[:9], event[9:])


def result(rid: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


INIT_RESULT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s"}}


class Scripted:
    """A raw HTTP/1.1 server: counts connections, reads each POST, lets `script` answer it."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.posts: list[tuple[int, dict[str, Any]]] = []
        self.agents: set[str] = set()  # the User-Agent of every POST: the lean path's or httpx's
        self.order: list[str] = []  # each request's method ("GET" for the standalone stream)
        self.closed = asyncio.Event()  # a client closed a connection (EOF seen)
        self.server: asyncio.Server | None = None
        self.url = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        conn = self.connections
        try:
            while True:
                try:
                    raw_head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    self.closed.set()
                    return
                lines = raw_head.decode("latin-1").split("\r\n")
                fields = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:] if line)}
                if lines[0].startswith("GET "):  # the standalone stream: opened, then quiet until closed
                    self.order.append("GET")
                    writer.write(
                        head("200 OK", {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
                    )
                    await reader.read()
                    return
                self.agents.add(fields.get("user-agent", ""))
                body = json.loads(await reader.readexactly(int(fields["content-length"])))
                self.posts.append((conn, body))
                self.order.append(body.get("method", "response"))
                answer = await self.script(body, conn)
                if answer is None:
                    return
                if answer == HOLD:  # never answered: wait until the client gives up on the connection
                    await reader.read()
                    self.closed.set()
                    return
                writer.write(answer)
                await writer.drain()
                if b"connection: close" in answer.partition(b"\r\n\r\n")[0]:
                    return  # the answer ends with the connection
        finally:
            writer.close()

    async def __aenter__(self) -> Scripted:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()


async def handshake(body: dict[str, Any]) -> bytes | None:
    """Answer `initialize` and `notifications/initialized`; anything else is the test's."""
    if body.get("method") == "initialize":
        return json_answer(result(body["id"], INIT_RESULT), **{"mcp-session-id": "s-1"})
    return head("202 Accepted", {"content-length": "0"})


@pytest.fixture
async def echo_server() -> AsyncIterator[Scripted]:
    async def script(body: dict[str, Any], conn: int) -> bytes | None:
        if body.get("method") == "tools/call":
            return sse_answer(result(body["id"], {"content": [], "conn": conn}))
        return await handshake(body)

    async with Scripted(script) as server:
        yield server


async def test_a_chunked_sse_answer_is_read_whatever_its_split() -> None:
    """Fed one byte at a time, the parser still yields the whole body and the end of the message."""
    conn = LeanConnection()
    data = sse_answer(result(7, {"ok": True}))
    for i in range(len(data)):
        conn.data_received(data[i : i + 1])
    assert conn.head_done
    assert conn.complete
    assert conn.keep_alive
    body = conn.take()
    assert body is not None
    assert b'"id": 7' in body
    assert body.startswith(b": primed\n\n")


async def test_calls_reuse_one_keep_alive_connection(echo_server: Scripted) -> None:
    async with lean_client(echo_server.url) as client:
        for _ in range(3):
            await client.call_tool("echo", {})
    conns = {conn for conn, _ in echo_server.posts}
    assert len(echo_server.posts) == 5  # initialize, initialized, three calls
    assert conns == {1}


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    async def script(body: dict[str, Any], conn: int) -> bytes | None:
        if body.get("method") == "tools/call":
            if conn == 1:
                return None  # the server drops its idle connection as the next request comes in
            return sse_answer(result(body["id"], {"content": []}))
        return await handshake(body)

    async with Scripted(script) as server:
        async with lean_client(server.url) as client:
            await client.call_tool("echo", {})
        assert [conn for conn, _ in server.posts] == [1, 1, 1, 2]


async def test_a_401_with_a_body_names_the_status_and_the_servers_message() -> None:
    async def script(body: dict[str, Any], conn: int) -> bytes | None:
        if body.get("method") == "tools/call":
            error = {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32600, "message": "bad token"}}
            return json_answer(error, "401 Unauthorized")
        return await handshake(body)

    async with Scripted(script) as server:
        async with lean_client(server.url) as client:
            with pytest.raises(JSONRPCError) as caught:
                await client.call_tool("echo", {})
            assert "HTTP 401 from the server: bad token" in str(caught.value)
            # the connection survives: the next call is answered
            with pytest.raises(JSONRPCError):
                await client.call_tool("echo", {})
        assert {conn for conn, _ in server.posts} == {1}


async def test_a_call_given_up_on_a_slow_server_drops_its_connection() -> None:
    held = anyio.Event()

    async def script(body: dict[str, Any], conn: int) -> bytes | None:
        if body.get("method") == "tools/call" and body["params"]["name"] == "slow":
            held.set()
            return HOLD
        if body.get("method") == "tools/call":
            return sse_answer(result(body["id"], {"content": []}))
        return await handshake(body)

    async with Scripted(script) as server, lean_client(server.url) as client:
        # Given up on once the server holds it: a short timeout could fire before the POST was written on a
        # loaded box (and a request cancelled unsent never goes out), so the test would not be about that.
        with anyio.CancelScope() as gave_up:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(client.call_tool, "slow", {})
                with anyio.fail_after(10):
                    await held.wait()
                gave_up.cancel()
        assert gave_up.cancelled_caught
        with anyio.fail_after(10):
            await server.closed.wait()  # the abandoned request's connection was closed, not reused
        await client.call_tool("fast", {})
    methods = [(conn, body.get("method"), body.get("params", {}).get("name")) for conn, body in server.posts]
    slow_conn = next(conn for conn, _, name in methods if name == "slow")
    fast_conn = next(conn for conn, _, name in methods if name == "fast")
    assert fast_conn != slow_conn


async def test_a_refused_connection_is_a_connect_error() -> None:
    pool = LeanPool("http://127.0.0.1:9/mcp", connect_timeout=5)
    with pytest.raises(httpx.ConnectError):
        async with pool.stream(b"{}", {}):
            pass


class FakeSocket(asyncio.Transport):
    """Records what the connection asks of its socket."""

    def __init__(self) -> None:
        super().__init__()
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


async def test_a_reader_that_falls_behind_pauses_the_socket() -> None:
    conn = LeanConnection()
    sock = FakeSocket()
    conn.connection_made(sock)
    conn.data_received(head("200 OK", {"content-type": "application/json", "content-length": "400000"}))
    conn.data_received(b"x" * 200_000)
    assert not sock.paused
    conn.data_received(b"x" * 100_000)
    assert sock.paused  # past 256 KiB unread: the server must wait for us
    taken = conn.take()
    assert taken is not None
    assert len(taken) == 300_000
    assert not sock.paused


async def test_an_answer_ended_by_closing_the_connection_is_read_and_not_reused() -> None:
    async def script(body: dict[str, Any], conn: int) -> bytes | None:
        if body.get("method") == "tools/call":
            data = json.dumps(result(body["id"], {"content": [], "conn": conn})).encode()
            return head("200 OK", {"content-type": "application/json", "connection": "close"}) + data
        return await handshake(body)

    async with Scripted(script) as server, lean_client(server.url) as client:
        first = await client.call_tool("echo", {})
        second = await client.call_tool("echo", {})
    assert first["conn"] == 1  # the handshake's connection, then closed by the server
    assert second["conn"] == 2
