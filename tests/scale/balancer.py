"""A round-robin HTTP/1.1 balancer for tests: every request goes to the next backend, none sticky.

Each request is forwarded on a fresh backend connection with `Connection: close`, and its response (JSON or
an SSE stream of any length) is copied back as it comes until the backend closes; then the client's
connection is closed too. Request bodies must have a Content-Length (JSON-RPC POSTs do).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

_HOP = (b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade")


class Balancer:
    """Listens on 127.0.0.1; `url` is its endpoint. Run `serve()` in a task; `ports` may change live."""

    def __init__(self, ports: Sequence[int], path: str = "/mcp") -> None:
        self.ports = list(ports)
        self.path = path
        self._turn = itertools.count()
        self.server: asyncio.Server | None = None
        self.port = 0
        self._exchanges: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """The balanced endpoint."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def start(self) -> None:
        """Listen (on a free port)."""
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        """End the exchanges still open (their connections closed and detached from the server), then stop
        listening. In that order: CPython 3.13.0's `Server` raises `TypeError` from a connection that detaches
        after `close()` once its last client had gone (its waiters are already None; fixed in 3.13.1)."""
        exchanges = list(self._exchanges)
        for exchange in exchanges:
            exchange.cancel()
        await asyncio.gather(*exchanges, return_exceptions=True)
        for _ in range(3):  # the closed transports' `connection_lost` (and detach) run on the next turns
            await asyncio.sleep(0)
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._exchanges.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head[:-4].split(b"\r\n")
            kept = [line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP]
            length = 0
            for line in kept:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            port = self.ports[next(self._turn) % len(self.ports)]
            back_reader, back_writer = await asyncio.open_connection("127.0.0.1", port)
            back_writer.write(b"\r\n".join([lines[0], *kept, b"Connection: close"]) + b"\r\n\r\n" + body)
            try:
                while chunk := await back_reader.read(65536):
                    writer.write(chunk)
                    await writer.drain()  # a slow client slows the copy down
            finally:
                back_writer.close()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # a client or a backend that went away: this exchange ends, the balancer goes on
        except asyncio.CancelledError:
            pass  # the test's loop is closing with a stream still open: nothing left to copy to
        finally:
            writer.close()
            if task is not None:
                self._exchanges.discard(task)
