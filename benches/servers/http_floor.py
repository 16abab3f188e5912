"""The servers `benches/bench_http_wire.py` runs in children besides `mcpframe serve`: floor and SDK.

The floor does the least a JSON-RPC echo over Streamable HTTP needs (asyncio Protocol + orjson): find the
body, decode it, answer `initialize` with a session id, `202` to notifications, the echo's result as JSON
or as one SSE event (the 20 ms `slow` tool after a timer).
"""

from __future__ import annotations

import asyncio
import secrets
import socket
from typing import Any

import orjson


class FloorProtocol(asyncio.Protocol):
    """The floor: HTTP/1.1 keep-alive POSTs answered with the least work a JSON-RPC echo needs."""

    sse = False

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            at = head.find(b"content-length:")
            length = (
                int(head[at + 15 : head.find(b"\r\n", at) if head.find(b"\r\n", at) > 0 else end])
                if at >= 0
                else 0
            )
            if len(self.buffer) < end + 4 + length:
                return
            body, self.buffer = self.buffer[end + 4 : end + 4 + length], self.buffer[end + 4 + length :]
            self.answer(head, body)

    def answer(self, head: bytes, body: bytes) -> None:
        assert self.transport is not None
        if not head.startswith(b"post"):  # DELETE of a session, anything else
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            return
        message = orjson.loads(body)
        if "id" not in message:
            self.transport.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            return
        if message["method"] == "initialize":
            result: Any = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": "1"},
            }
            self.write(message["id"], result, b"Mcp-Session-Id: %s\r\n" % secrets.token_hex(16).encode())
            return
        params = message["params"]
        result = {"content": [{"type": "text", "text": params["arguments"]["text"]}], "isError": False}
        if params["name"] == "slow":
            asyncio.get_running_loop().call_later(0.020, self.write, message["id"], result, b"")
        else:
            self.write(message["id"], result, b"")

    def write(self, rid: Any, result: Any, extra: bytes) -> None:
        assert self.transport is not None
        payload = orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result})
        if self.sse:
            payload, kind = b"event: message\ndata: %s\n\n" % payload, b"text/event-stream"
        else:
            kind = b"application/json"
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\n%sContent-Length: %d\r\n\r\n%s"
            % (kind, extra, len(payload), payload)
        )


def _listening_socket() -> socket.socket:
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP (and accepted
    # sockets inherit it); without it a reply written in two parts waits ~40 ms for a delayed ACK
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    return sock


def serve_floor(sse: bool) -> None:
    """The floor server, until killed."""
    FloorProtocol.sse = sse
    sock = _listening_socket()

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(FloorProtocol, sock=sock)
        print(f"URL http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
        await server.serve_forever()

    asyncio.run(main())


def serve_sdk(json_answers: bool) -> None:
    """The SDK's server on uvicorn, until killed."""
    import uvicorn  # noqa: PLC0415

    from servers.http_tools import sdk_server  # noqa: PLC0415

    app = sdk_server().streamable_http_app(json_response=json_answers)
    sock = _listening_socket()
    print(f"URL http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
