"""The load generator of `benches/bench_http_wire.py`: a raw asyncio HTTP/1.1 client and an MCP session on it.

Not any server's client library: one keep-alive connection per MCP session, one request in flight, the
response parsed by hand (Content-Length or chunked), JSON or SSE bodies; so the servers are compared, not
the clients.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-wire", "version": "1"},
}

# ---------------------------------------------------------------------------------------------- HTTP/1.1


def parse_response(buf: bytearray) -> tuple[int, int, dict[str, str], bytes] | None:
    """One whole response at the start of `buf`: (bytes used, status, headers, body), or `None` if short.

    Content-Length and chunked bodies only: every server here keeps the connection alive, so a body is
    never delimited by the connection closing.
    """
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    pos = end + 4
    if "content-length" in headers:
        stop = pos + int(headers["content-length"])
        return None if len(buf) < stop else (stop, status, headers, bytes(buf[pos:stop]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
            start = eol + 2
            if len(buf) < start + size + 2:
                return None
            if size == 0:  # no trailers from these servers
                return start + 2, status, headers, bytes(body)
            body += buf[start : start + size]
            pos = start + size + 2
    if status in (204, 304) or status < 200:
        return pos, status, headers, b""
    raise ValueError(f"a response without a length: {bytes(buf[:end])!r}")


class Connection(asyncio.Protocol):
    """A keep-alive HTTP/1.1 client connection with one request in flight."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[tuple[int, dict[str, str], bytes]] | None = None
        self.lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is None or self.waiter.done():
            return
        parsed = parse_response(self.buffer)
        if parsed is not None:
            used, status, headers, body = parsed
            del self.buffer[:used]
            self.waiter.set_result((status, headers, body))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or ConnectionResetError("the server closed the connection")
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(self.lost)

    async def request(self, head: bytes, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send `head` (request line and headers, no Content-Length) and `body`; the whole response."""
        if self.lost is not None:
            raise self.lost
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body))
        return await self.waiter


async def open_connection(port: int) -> Connection:
    """A TCP connection to 127.0.0.1:`port` with Nagle off (asyncio does that for TCP sockets)."""
    _, protocol = await asyncio.get_running_loop().create_connection(Connection, "127.0.0.1", port)
    return protocol


def sse_messages(body: bytes) -> list[Any]:
    """The JSON of each SSE event's data in `body` (events without data, such as priming, are skipped)."""
    messages = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if data and any(data):
            messages.append(orjson.loads(b"\n".join(data)))
    return messages


def answer_of(headers: dict[str, str], body: bytes, rid: int) -> Any:
    """The JSON-RPC response with id `rid` in a JSON or SSE response body."""
    kind = headers.get("content-type", "")
    found = sse_messages(body) if kind.startswith("text/event-stream") else [orjson.loads(body)]
    for message in found:
        if isinstance(message, dict) and message.get("id") == rid:
            return message
    raise AssertionError(f"no response to {rid} in {kind} body {body!r}")


# ---------------------------------------------------------------------------------------------- a session


class Session:
    """One MCP session over one connection: `call(rid)` sends `tools/call` and checks the echo."""

    def __init__(self, conn: Connection, port: int, era: str, tool: str) -> None:
        self.conn, self.port, self.era, self.tool = conn, port, era, tool
        self.base = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n" % port
        )
        self.head = self.base
        self.session_id: str | None = None
        self.content_type = ""

    async def open(self) -> None:
        """`initialize` + `notifications/initialized` in the legacy era; nothing for stateless requests."""
        if self.era == "modern":
            self.head = self.base + (
                b"Mcp-Protocol-Version: %s\r\nMcp-Method: tools/call\r\nMcp-Name: %s\r\n"
                % (MODERN_VERSION.encode(), self.tool.encode())
            )
            return
        params = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "bench-wire", "version": "1"},
        }
        body = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        status, headers, answer = await self.conn.request(self.base, body)
        if status != 200 or "result" not in answer_of(headers, answer, 0):
            raise AssertionError(f"initialize answered {status} {answer!r}")
        self.session_id = headers["mcp-session-id"]
        self.head = self.base + (
            b"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n"
            % (self.session_id.encode(), LEGACY_VERSION.encode())
        )
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        status, _, answer = await self.conn.request(self.head, note)
        if status != 202:
            raise AssertionError(f"notifications/initialized answered {status} {answer!r}")

    def body(self, rid: int) -> bytes:
        params: dict[str, Any] = {"name": self.tool, "arguments": {"text": f"t{rid}"}}
        if self.era == "modern":
            params["_meta"] = MODERN_META
        return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    async def _connected(self) -> Connection:
        # a server may close a kept-alive connection that stayed idle (uvicorn: after 5 s), as any HTTP
        # client does, open another one: the MCP session lives on in its id
        if self.conn.lost is not None:
            self.conn = await open_connection(self.port)
        return self.conn

    async def check(self, rid: int) -> str:
        """One call with every part of its answer checked; returns the answer's Content-Type."""
        conn = await self._connected()
        status, headers, body = await conn.request(self.head, self.body(rid))
        message = answer_of(headers, body, rid)
        content = message.get("result", {}).get("content")
        if status != 200 or content != [{"type": "text", "text": f"t{rid}"}]:
            raise AssertionError(f"{self.tool}(t{rid}) answered {status} {body!r}")
        self.content_type = headers.get("content-type", "").split(";")[0]
        return self.content_type

    async def call(self, rid: int) -> None:
        """One timed call: the status and the echoed text are checked, cheaply."""
        conn = self.conn if self.conn.lost is None else await self._connected()
        status, _, body = await conn.request(self.head, self.body(rid))
        if status != 200 or b'"t%d"' % rid not in body:
            raise AssertionError(f"{self.tool}(t{rid}) answered {status} {body!r}")
