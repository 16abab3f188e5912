"""The remote proxy's fast lane (`http/client_fast.py`) behind a slow stdout: what it queues for the writer
stays bounded while a server streams, and a stream the transport resumes does not overtake what the lane
still has to write; a JSON answer longer than a connection's read mark is read whole. Against a scripted
in-process HTTP server (one per test)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http.client_fast import FastLane
from mcpframe.proxy.remote import fast_lane, proxy_remote, remote_transport

pytestmark = pytest.mark.anyio

Answer = Callable[[dict[str, Any], dict[str, str], asyncio.StreamWriter], Awaitable[None]]


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(message: dict[str, Any], event_id: str | None = None) -> bytes:
    head = b"id: %s\n" % event_id.encode() if event_id else b""
    return chunk(head + b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")


SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def log(text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": text}}


def result(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": []}}


class Server:
    """A Streamable HTTP server answering `initialize` and notifications itself, each request with
    `on_request`, a GET carrying `Last-Event-ID` with `on_resume` (any other GET: 405)."""

    def __init__(self, on_request: Answer, on_resume: Answer | None = None) -> None:
        self.on_request = on_request
        self.on_resume = on_resume
        self.resumed = 0  # GETs with `Last-Event-ID` seen

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                lines = (await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
                headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:]) if v}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                await self.respond(lines[0].split()[0], headers, body, writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def respond(
        self, verb: str, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter
    ) -> None:
        if verb == "GET":
            if "last-event-id" in headers and self.on_resume is not None:
                self.resumed += 1
                await self.on_resume({}, headers, writer)
            else:
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            return
        if verb != "POST":  # DELETE: the session's end
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            return
        message = json.loads(body)
        if message.get("method") == "initialize":
            info = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"},
            }
            out = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": info}).encode()
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\n"
            writer.write(head + b"content-length: %d\r\n\r\n%s" % (len(out), out))
        elif "id" not in message:
            writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
        else:
            await self.on_request(message, headers, writer)


class GatedStdio:
    """The proxy's stdin/stdout: the first write to stdout waits for `release` (a client not reading);
    later writes go through. Lines are recorded as they are written."""

    def __init__(self) -> None:
        self.input, self._incoming = anyio.create_memory_object_stream[bytes](100)
        self.out: list[dict[str, Any]] = []
        self.release = anyio.Event()
        self.gated = False
        self.changed = anyio.Event()

    async def receive(self) -> bytes:
        try:
            return await self._incoming.receive()
        except anyio.EndOfStream:
            return b""

    async def send(self, data: bytes) -> None:
        if self.gated and not self.release.is_set():
            await self.release.wait()
        self.out += [json.loads(line) for line in data.splitlines() if line]
        self.changed.set()
        self.changed = anyio.Event()

    async def write(self, message: dict[str, Any]) -> None:
        await self.input.send(json.dumps(message).encode() + b"\n")

    async def answer(self, rid: Any) -> int:
        """The index in `out` of the answer to `rid`, once it came."""
        while True:
            for index, message in enumerate(self.out):
                if message.get("id") == rid and "method" not in message:
                    return index
            await self.changed.wait()


async def until(condition: Callable[[], bool]) -> None:
    """Until `condition()` holds (looked at between the event loop's turns; the caller bounds the wait)."""
    while not condition():
        await anyio.sleep(0.002)


@asynccontextmanager
async def proxied(server: Server) -> AsyncIterator[tuple[GatedStdio, FastLane]]:
    """An in-process `mcpframe proxy URL` to `server`, the handshake done; stdout gated from then on."""
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    stdio = GatedStdio()
    try:
        async with (
            remote_transport(f"http://127.0.0.1:{port}/mcp", {}) as remote,
            anyio.create_task_group() as tg,
        ):
            lane = fast_lane(remote)
            assert isinstance(lane, FastLane)
            tg.start_soon(lambda: proxy_remote(stdio, remote, lane=lane))
            init = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            }
            await stdio.write({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
            await stdio.answer("init")
            await stdio.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
            stdio.gated = True
            stdio.out.clear()  # the test's own lines from here
            yield stdio, lane
            stdio.release.set()
            tg.cancel_scope.cancel()
    finally:
        listener.close()


def call(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "t", "arguments": {}}}


EVENTS = 96
PAYLOAD = "x" * 65536  # 96 x 64 KiB: 6 MiB, well past the lane's bound (1 MiB) and the sockets' buffers


async def flood(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
    writer.write(SSE_HEAD)
    for n in range(EVENTS):
        writer.write(event(log(f"{n} {PAYLOAD}")))
        await writer.drain()  # a proxy that stops reading stops this server here
    writer.write(event(result(message["id"])) + b"0\r\n\r\n")


async def test_a_streaming_server_is_held_back_while_stdout_is_not_read() -> None:
    with anyio.fail_after(20):
        async with proxied(Server(flood)) as (stdio, lane):
            await stdio.write(call(1))
            # the lane stops taking from the connection, which stops reading its socket: nothing moves then
            await until(lambda: any(conn.paused or conn.complete for conn in lane._held))
            bound = lane._max_queued + 1024 * 1024  # past the mark: at most one connection's read more
            assert lane.most_queued <= bound, lane.most_queued
            assert not stdio.out  # the first write still waits
            stdio.release.set()
            at = await stdio.answer(1)
            logs = [m["params"]["data"].split()[0] for m in stdio.out if m.get("method")]
            assert logs == [str(n) for n in range(EVENTS)]  # every event, in order, then the answer
            assert at == EVENTS
            assert lane.most_queued <= bound
            assert lane.queued == 0


class Resumed:
    """A request's stream: two logs (events `e1`, `e2`), then the stream ends without the answer; resumed
    (GET + `Last-Event-ID: e2`), it sends the answer."""

    def __init__(self) -> None:
        self.rid: Any = None

    async def first(
        self, message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter
    ) -> None:
        self.rid = message["id"]
        writer.write(SSE_HEAD + chunk(b"retry: 0\n\n") + event(log("one"), "e1"))
        await writer.drain()
        writer.write(event(log("two"), "e2") + b"0\r\n\r\n")

    async def resume(
        self, message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter
    ) -> None:
        assert headers["last-event-id"] == "e2"
        writer.write(SSE_HEAD + event(result(self.rid), "e3") + b"0\r\n\r\n")


async def test_a_resumed_stream_does_not_overtake_what_the_lane_still_writes() -> None:
    script = Resumed()
    server = Server(script.first, script.resume)
    with anyio.fail_after(10):
        async with proxied(server) as (stdio, lane):
            transport = lane._transport
            taken: list[Any] = []

            def take_over(message: Any, *args: Any, **kwargs: Any) -> None:
                taken.append(message.id)
                type(transport).take_over(transport, message, *args, **kwargs)

            transport.take_over = take_over  # type: ignore[method-assign]
            await stdio.write(call(7))
            await until(lambda: lane.handed_over == 1)
            # the logs wait behind stdout: the transport resumes the stream only once they are written
            assert taken == []
            stdio.release.set()
            at = await stdio.answer(7)
            assert [m["params"]["data"] for m in stdio.out[:at]] == ["one", "two"]
            assert taken == [7]
            assert server.resumed == 1


async def test_a_connection_made_while_the_lane_closes_is_closed_too() -> None:
    closed = anyio.Event()

    async def never(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        raise AssertionError("nothing is posted")

    class Watching(Server):
        async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await super().handle(reader, writer)
            closed.set()

    with anyio.fail_after(10):
        async with proxied(Watching(never)) as (_, lane):
            closed = anyio.Event()  # the connections of the handshake are the transport's, not watched
            lane.close()  # as at shutdown, while a request's connection was being made
            with pytest.raises(httpx.ConnectError):
                await lane._connect()
            assert lane._open == 0
            await closed.wait()  # the server saw it closed


async def test_a_json_answer_past_the_connections_read_mark_is_read_whole() -> None:
    text = "x" * 1_000_000  # past the 256 KiB a lean connection holds unread before pausing its socket

    async def big(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        answer = {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {"content": [{"type": "text", "text": text}]},
        }
        out = json.dumps(answer).encode()
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(out)
        writer.write(head + out)

    with anyio.fail_after(10):
        async with proxied(Server(big)) as (stdio, lane):
            stdio.release.set()
            await stdio.write(call(3))
            at = await stdio.answer(3)
            assert stdio.out[at]["result"]["content"][0]["text"] == text
            assert lane.posted == 1
            assert lane.handed_over == 0
