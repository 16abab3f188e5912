"""For the tests of handlers that suspend, served live on 127.0.0.1 (test_server_deferred*, test_sse_wire*):
tools that wait on gates the test opens (`GatedTools`, `LateLogTools`), the server with a session open on it
(`serving`, `session_of`),
what the lean server ran in tasks (`wire_tasks`), the raw POSTs of a streamed request and the bytes
it brings (`post_streamed`, `read_raw`), and a raw client with a small receive window that has the server's
SSE writer wait for room (`SlowClient`, `flooding`)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import sse_wire
from mcpframe.http import wire as wire_module
from mcpframe.http.server import HttpOptions, StreamableHTTPServer
from mcpframe.http.sessions import HttpSession
from mcpframe.server import Context, Server

from ._server_support import call, open_session, raw_post, served


class GatedTools:
    """A server whose tools wait on gates the test opens, counting how each run ended: `echo` (a `def`
    tool, on the worker pool) and `hold` (suspends until `gate` opens); each test file adds its own."""

    def __init__(self, name: str) -> None:
        self.server = Server(name, version="1.0.0")
        self.entered = anyio.Event()
        self.gate = anyio.Event()
        self.cancelled = 0
        self.finished = 0
        tools = self

        @self.server.tool
        def echo(text: str) -> str:
            """A `def` tool: on the worker pool, so its answer comes after the POST's first step."""
            return text

        @self.server.tool
        async def hold(text: str) -> str:
            """Suspends until the test opens the gate."""
            tools.entered.set()
            try:
                await tools.gate.wait()
            except BaseException:
                tools.cancelled += 1
                raise
            tools.finished += 1
            return text


class LateLogTools(GatedTools):
    """`GatedTools` plus `late_log`: suspends until `gate` opens, then logs, then answers (so its answer
    cannot go out before a stream is made for the log)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        tools = self

        @self.server.tool
        async def late_log(ctx: Context) -> str:
            """Suspends, then logs, then answers."""
            tools.entered.set()
            await tools.gate.wait()
            await ctx.info("late")
            return "logged"


@contextlib.asynccontextmanager
async def live_app(
    tools: GatedTools, *, http_server: str = "mcpframe", grace: float | None = None, **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTPServer]]:
    """`tools` served by `http_server` on 127.0.0.1 (stopped with `grace`, `serve_http`'s); yields (URL,
    the app)."""
    opts = HttpOptions(**options)
    app = StreamableHTTPServer(tools.server, opts)
    async with served(tools.server, options=opts, http_server=http_server, app=app, grace=grace) as url:
        yield url, app


@contextlib.asynccontextmanager
async def serving(
    tools: GatedTools, http_server: str = "mcpframe", **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTPServer, httpx.AsyncClient, dict[str, str]]]:
    """`live_app` with a session opened on it; yields (URL, the app, a client, the headers of a request in
    the session)."""
    async with (
        live_app(tools, http_server=http_server, **options) as (url, app),
        httpx.AsyncClient(timeout=10) as client,
    ):
        yield url, app, client, await open_session(client, url)


def session_of(app: StreamableHTTPServer, headers: dict[str, str]) -> HttpSession:
    """The session `headers` (a request's, as `serving` yields them) belong to on `app`."""
    session = app.sessions.find(headers, None)
    assert isinstance(session, HttpSession)
    return session


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until `condition()` holds (no clock involved; bounded by the caller's fail_after)."""
    while not condition():
        await anyio.sleep(0)


async def post_streamed(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], body: dict[str, Any]
) -> httpx.Response:
    """POST `body`; the response as soon as its head came (the caller reads and closes it)."""
    return await client.send(client.build_request("POST", url, json=body, headers=headers), stream=True)


async def read_raw(chunks: AsyncIterator[bytes], done: Callable[[bytes], bool]) -> bytes:
    """What `chunks` (a response's `aiter_raw()`) bring until `done(all read so far)` holds or they end;
    the caller may read on from `chunks`."""
    got = b""
    async for chunk in chunks:
        got += chunk
        if done(got):
            break
    return got


@pytest.fixture
def wire_tasks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The app calls the lean server ran in tasks (`WireServer.start`, `_spawn`), by coroutine name."""
    started: list[str] = []
    real_start, real_spawn = wire_module.WireServer.start, wire_module.WireServer._spawn

    def start(self: wire_module.WireServer, coro: Any) -> None:
        started.append(coro.__qualname__)
        real_start(self, coro)

    def spawn(self: wire_module.WireServer, coro: Any) -> Any:
        started.append(coro.__qualname__)
        return real_spawn(self, coro)

    monkeypatch.setattr(wire_module.WireServer, "start", start)
    monkeypatch.setattr(wire_module.WireServer, "_spawn", spawn)
    return started


class SlowClient:
    """A raw HTTP/1.1 connection whose receive window is small until `read_until` reads."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url = url
        self.headers = headers
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting
        self.sock.setblocking(False)
        self.text = b""

    async def connect(self) -> None:
        host, port = self.url.split("/")[2].split(":")
        await asyncio.get_running_loop().sock_connect(self.sock, (host, int(port)))
        self.reader, self.writer = await asyncio.open_connection(sock=self.sock)

    def post(self, *bodies: dict[str, Any]) -> None:
        """Send the POSTs at once (pipelined)."""
        self.writer.write(b"".join(raw_post(self.url, self.headers, body) for body in bodies))

    async def read_until(self, done: bytes, count: int) -> bytes:
        """Read quickly now, until `done` was read `count` times."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        while self.text.count(done) < count:
            chunk = await self.reader.read(1 << 20)
            assert chunk, self.text[-300:]
            self.text += chunk
        return self.text


@contextlib.asynccontextmanager
async def slow_client(url: str, headers: dict[str, str]) -> AsyncIterator[SlowClient]:
    """A connected `SlowClient`, closed on the way out."""
    slow = SlowClient(url, headers)
    await slow.connect()
    try:
        yield slow
    finally:
        slow.writer.close()


@contextlib.asynccontextmanager
async def flooding(
    url: str, headers: dict[str, str], writers: list[sse_wire.SseWriter], *behind: dict[str, Any]
) -> AsyncIterator[SlowClient]:
    """A `SlowClient` that POSTs a call of `flood` (id 6), with `behind` pipelined after it; yields it once
    the first SSE writer (of `writers`, the ones the server opened) waits for room (60 s: a hang guard)."""
    async with slow_client(url, headers) as slow:
        slow.post(call("flood", rid=6), *behind)
        with anyio.fail_after(60):
            await until(lambda: paused(writers))
        yield slow


def paused(writers: list[sse_wire.SseWriter]) -> bool:
    """The first SSE writer's socket is full (its producer waits for room)."""
    return bool(writers) and writers[0].room() is not None


def connection_of(writer: sse_wire.SseWriter) -> wire_module._Connection:
    """The lean server's connection an SSE writer writes to."""
    out = writer._out
    assert isinstance(out, wire_module._Out)
    return out._connection
