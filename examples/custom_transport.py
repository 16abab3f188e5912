"""A custom transport (MCP over a plain TCP socket), and a raw client built on the core `Decoder`.

    python examples/custom_transport.py

A transport is three async methods (`mcpframe.transports.Transport`): `receive()` returns whatever bytes
arrived (`b""` at the end), `send(data)` writes whole NDJSON frames, `aclose()`. `Server.serve(transport)`
serves one connection on it, and `Client(transport=...)` speaks over it. The client half here skips the
`Client` and drives the wire itself with the core: `Decoder.feed(chunk)` returns every complete frame in
the chunk (split anywhere), `encode_request` / `encode_notification` write them.
"""

from __future__ import annotations

from typing import Any

import anyio
from anyio.abc import SocketStream

from mcpframe import core
from mcpframe.server import Server
from mcpframe.transports import TransportClosedError

server = Server("tcp-demo", version="1.0.0")


@server.tool
def reverse(text: str) -> str:
    """Reverse a string."""
    return text[::-1]


class TcpTransport:
    """An mcpframe transport over a TCP connection: bytes in, bytes out, nothing about JSON-RPC."""

    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream

    async def receive(self) -> bytes:
        try:
            return await self._stream.receive(256 * 1024)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return b""

    async def send(self, data: bytes) -> None:
        try:
            await self._stream.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise TransportClosedError(str(exc)) from exc

    async def aclose(self) -> None:
        await self._stream.aclose()


class RawClient:
    """Requests and answers with the core alone: frames out with `encode_*`, frames in with a `Decoder`."""

    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream
        self._decoder = core.Decoder()
        self._ready: list[Any] = []
        self._next_id = 0

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self._next_id += 1
        await self._stream.send(core.encode_request(self._next_id, method, params))
        while True:
            for item in self._ready:
                if isinstance(item, core.FrameError):
                    raise RuntimeError(f"bad frame from the server: {item.message}")
                if item.kind in ("result", "error") and item.id == self._next_id:
                    self._ready.remove(item)
                    if item.kind == "error":
                        raise RuntimeError(f"{method}: {item.error}")
                    return item.result
            # one chunk may hold several frames or part of one: feed() returns the complete ones, in order
            self._ready.extend(self._decoder.feed(await self._stream.receive()))

    async def notify(self, method: str) -> None:
        await self._stream.send(core.encode_notification(method))


async def main() -> None:
    async def serve_one(stream: SocketStream) -> None:
        async with stream:
            await server.serve(TcpTransport(stream))

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    print(f"serving on tcp://127.0.0.1:{port} (core backend: {core.BACKEND})")
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve_one)
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            client = RawClient(stream)
            hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw"}}
            result = await client.request("initialize", hello)
            await client.notify("notifications/initialized")
            print("initialized:", result["serverInfo"]["name"], result["protocolVersion"])
            call = {"name": "reverse", "arguments": {"text": "stressed"}}
            result = await client.request("tools/call", call)
            print("reverse('stressed') =", result["content"][0]["text"])
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
