"""Helpers of the tests of mcpframe's own HTTP/1.1 server (`http/wire.py`) on raw connections."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcpframe.http import wire as wire_module
from mcpframe.http.wire import WireServer
from mcpframe.http.wire_parts import WireAnswer


async def request_body(receive: Any) -> bytes:
    """The whole body of an ASGI request, read from its `receive`."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


@asynccontextmanager
async def wire_connection(
    app: Any, **options: float
) -> AsyncIterator[tuple[WireServer, asyncio.StreamReader, asyncio.StreamWriter]]:
    """`app` under a `WireServer(app, **options)` on a free port, and one connection to it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    wire = WireServer(app, **options)
    await wire.listen(sock)
    reader, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
    try:
        yield wire, reader, writer
    finally:
        writer.close()
        await wire.close()
        sock.close()


def post(body: bytes) -> bytes:
    """A POST of `body` to `/`, with its Content-Length."""
    return b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def ok_bodies(reader: asyncio.StreamReader, count: int) -> list[bytes]:
    """The bodies of the next `count` responses, each a 200 with a Content-Length."""
    bodies = []
    for _ in range(count):
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        bodies.append(await reader.readexactly(length))
    return bodies


def count_nexts(monkeypatch: Any) -> list[int]:
    """Counts each run of `_Connection._next` (a request taken from the connection's queue): the list gets the
    queue's length at each run."""
    calls: list[int] = []
    real = wire_module._Connection._next

    def counted(self: wire_module._Connection) -> None:
        calls.append(len(self.pending))
        real(self)

    monkeypatch.setattr(wire_module._Connection, "_next", counted)
    return calls


async def until(condition: Any) -> None:
    """Yields to the loop until `condition()` holds (the test's `fail_after` bounds the wait)."""
    while not condition():
        await asyncio.sleep(0)


class FastApp:
    """An app whose every request takes the lean server's fast path: `whole:X` is answered `X` at once, any
    other body by `later(body)` (an answer the test ends)."""

    def __init__(self) -> None:
        self.offered: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("every request here is the fast path's")

    def wire_fast(self, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> WireAnswer | None:
        self.offered.append(body)
        if body.startswith(b"whole:"):
            return 200, b"content-type: text/plain\r\n", body[6:]
        return self.later(body)

    def later(self, body: bytes) -> WireAnswer:
        raise NotImplementedError
