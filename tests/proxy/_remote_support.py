"""The scripted peers of the remote proxy's tests (`mcpframe proxy URL` run in-process): a Streamable HTTP
server on a raw socket whose requests each test answers (`Server`), the proxy's stdio as the client sees it
(`Stdio`, `GatedStdio`), and `proxied`, which runs the proxy between them with the handshake done."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcpframe.http.client_fast import FastLane
from mcpframe.proxy.remote import MAX_IN_FLIGHT, proxy_remote, remote_transport

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


class Stdio:
    """The proxy's stdin/stdout as a test drives them: lines in (`write`), every line out recorded (`out`)."""

    def __init__(self) -> None:
        self.input, self._incoming = anyio.create_memory_object_stream[bytes](100)
        self.out: list[dict[str, Any]] = []
        self.changed = anyio.Event()

    async def receive(self) -> bytes:
        try:
            return await self._incoming.receive()
        except anyio.EndOfStream:
            return b""

    async def send(self, data: bytes) -> None:
        self.out += [json.loads(line) for line in data.splitlines() if line]
        self.changed.set()
        self.changed = anyio.Event()

    async def write(self, message: dict[str, Any]) -> None:
        await self.input.send(json.dumps(message).encode() + b"\n")

    async def answer_at(self, rid: Any) -> int:
        """The index in `out` of the answer to `rid`, once it came."""
        while True:
            for index, message in enumerate(self.out):
                if message.get("id") == rid and "method" not in message:
                    return index
            await self.changed.wait()

    async def answer(self, rid: Any) -> dict[str, Any]:
        """The answer to request `rid`, once it came."""
        return self.out[await self.answer_at(rid)]

    async def request_from_server(self, method: str) -> dict[str, Any]:
        return (await self.requests_from_server(method, 1))[0]

    async def requests_from_server(self, method: str, count: int) -> list[dict[str, Any]]:
        """The first `count` requests `method` from the server, once that many came."""
        while True:
            found = [m for m in self.out if m.get("method") == method and "id" in m]
            if len(found) >= count:
                return found[:count]
            await self.changed.wait()

    async def handshake(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        """Initialize (2025-11-25, as a client with `capabilities`) and send `initialized`; the answer to
        `initialize`."""
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "t", "version": "1"},
        }
        await self.write({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
        answer = await self.answer("init")
        await self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer


class GatedStdio(Stdio):
    """`Stdio` whose first write to stdout, once `gated`, waits for `release` (a client not reading);
    later writes go through."""

    def __init__(self) -> None:
        super().__init__()
        self.release = anyio.Event()
        self.gated = False

    async def send(self, data: bytes) -> None:
        if self.gated and not self.release.is_set():
            await self.release.wait()
        await super().send(data)


async def until(condition: Callable[[], bool]) -> None:
    """Until `condition()` holds (looked at between the event loop's turns; the caller bounds the wait)."""
    while not condition():
        await anyio.sleep(0.002)


@asynccontextmanager
async def proxied(
    server: Server, *, max_open: int | None = MAX_IN_FLIGHT, gated: bool = False
) -> AsyncIterator[tuple[GatedStdio, Any, Any]]:
    """An in-process `mcpframe proxy URL` to `server` with a fast lane of `max_open` connections (`None`:
    no lane), the handshake done; yields its stdio (stdout gated from then on if `gated`), its transport
    and its lane."""
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    stdio = GatedStdio()
    try:
        async with (
            remote_transport(f"http://127.0.0.1:{port}/mcp", {}) as remote,
            anyio.create_task_group() as tg,
        ):
            lane = None if max_open is None else FastLane(remote.streamable, max_open=max_open)
            tg.start_soon(lambda: proxy_remote(stdio, remote, lane=lane))
            await stdio.handshake({})
            stdio.gated = gated
            stdio.out.clear()  # the test's own lines from here
            yield stdio, remote, lane
            stdio.release.set()
            tg.cancel_scope.cancel()
    finally:
        listener.close()


def call(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "t", "arguments": {}}}


async def sse_answer(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
    """Answer a request at once, on an SSE stream."""
    writer.write(SSE_HEAD + event(result(message["id"])) + b"0\r\n\r\n")


def record_take_overs(transport: Any) -> list[Any]:
    """The ids of the requests the fast lane hands to `transport` (`take_over`) from now on, in order."""
    taken: list[Any] = []

    def take_over(message: Any, *args: Any, **kwargs: Any) -> None:
        taken.append(message.id)
        type(transport).take_over(transport, message, *args, **kwargs)

    transport.take_over = take_over
    return taken


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
