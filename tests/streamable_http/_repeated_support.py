"""Requests with a header repeated, on a raw kept-alive connection: what `test_s35_repeated_headers` and the
proxy's `test_s35_listen_repeated_headers` send to a server and to `proxy --listen`."""

from __future__ import annotations

import json
from typing import Any

import anyio
from tests.server._children import INITIALIZE as INIT

PING = {"jsonrpc": "2.0", "id": "p", "method": "ping"}
MEDIA = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]


class Wire:
    """One kept-alive connection to the server at `url`: requests written whole, answers read by length."""

    def __init__(self, stream: anyio.abc.ByteStream, url: str) -> None:
        self.stream, self.url, self.buffer = stream, url, b""

    async def ask(
        self, method: str, headers: list[tuple[str, str]], body: Any = None
    ) -> tuple[int, dict[str, str], bytes]:
        """`method` with these header lines (and `body` as JSON): (status, the answer's headers, its body)."""
        data = b"" if body is None else json.dumps(body).encode()
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers)
        await self.stream.send(
            f"{method} /mcp HTTP/1.1\r\n{lines}content-length: {len(data)}\r\n\r\n".encode() + data
        )
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += await self.stream.receive()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status_line, *fields = head.decode("latin-1").split("\r\n")
        found = {name.lower(): value.strip() for name, _, value in (f.partition(":") for f in fields)}
        length = int(found["content-length"])
        while len(self.buffer) < length:
            self.buffer += await self.stream.receive()
        answer, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(status_line.split()[1]), found, answer


async def connect(url: str) -> Wire:
    port = int(url.split("/")[2].rpartition(":")[2])
    return Wire(await anyio.connect_tcp("127.0.0.1", port), url)


def host(url: str) -> str:
    return url.split("/")[2]


async def session(url: str) -> list[tuple[str, str]]:
    """A 2025-06-18 session opened at `url`: the header lines its requests carry (Host included)."""
    wire = await connect(url)
    async with wire.stream:
        status, headers, _ = await wire.ask("POST", [("host", host(url)), *MEDIA], INIT)
        assert status == 200
        return [
            ("host", host(url)),
            ("mcp-session-id", headers["mcp-session-id"]),
            ("mcp-protocol-version", "2025-06-18"),
        ]


async def refused(url: str, method: str, lines: list[tuple[str, str]], body: Any = None) -> str:
    """`method` with `lines` after a good ping on the same connection (so that, on the lean server, it is
    read as a kept-alive request is): the refusal's JSON-RPC error message (the answer must be a 400)."""
    base = await session(url)
    with anyio.fail_after(10):
        wire = await connect(url)
        async with wire.stream:
            status, _, _ = await wire.ask("POST", [*base, *MEDIA], PING)
            assert status == 200
            status, _, answer = await wire.ask(method, [*base, *lines], body)
    assert status == 400, answer
    error = json.loads(answer)["error"]
    assert error["code"] == -32600
    return str(error["message"])


async def served_once(url: str, method: str, lines: list[tuple[str, str]], body: Any = None) -> int:
    """The status of `method` with `lines` added to a session's (on a fresh connection)."""
    base = await session(url)
    with anyio.fail_after(10):
        wire = await connect(url)
        async with wire.stream:
            status, _, _ = await wire.ask(method, [*base, *lines], body)
    return status
