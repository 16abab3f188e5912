"""Helpers for the legacy SSE server tests: a live uvicorn with the app in reach, a stream reader."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import uvicorn
from tests.streamable_http._server_support import EventReader, init_body, make_server, sse_events

from mcpframe.http.server import HttpOptions, StreamableHTTPServer
from mcpframe.server import Server

JSON = {"content-type": "application/json"}

__all__ = [
    "JSON",
    "AsgiStream",
    "LegacyStream",
    "asgi_post",
    "init_body",
    "live",
    "make_server",
    "open_stream",
]


@contextlib.asynccontextmanager
async def live(
    server: Server | None = None, **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTPServer]]:
    """uvicorn on 127.0.0.1 (a free port) in this event loop; yields the base URL and the ASGI app (whose
    `legacy` registry the tests inspect). The socket listens before uvicorn starts: early requests wait."""
    http = StreamableHTTPServer(server or make_server(), HttpOptions(**options))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(http.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    uv = uvicorn.Server(config)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: uv.serve(sockets=[sock]))
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}", http
            finally:
                http.end_streams()
                uv.should_exit = True
    finally:
        sock.close()


class LegacyStream:
    """An open GET /sse: where to post (from its `endpoint` event) and its `message` events."""

    def __init__(self, http: httpx.AsyncClient, base: str, response: httpx.Response, endpoint: str) -> None:
        self.http = http
        self.base = base
        self.response = response
        self.endpoint = endpoint
        self.reader = EventReader(response)

    @property
    def session_id(self) -> str:
        return self.endpoint.rsplit("=", 1)[-1]

    async def post(self, body: Any, **headers: str) -> httpx.Response:
        """POST a JSON value (or raw bytes) to the session's endpoint."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await self.http.post(self.base + self.endpoint, content=content, headers={**JSON, **headers})

    async def next(self) -> dict[str, Any]:
        """The next `message` event's JSON-RPC message."""
        with anyio.fail_after(10):
            (event,) = await self.reader.read(1)
        assert event["event"] == "message", event
        message: dict[str, Any] = json.loads(event["data"])
        return message

    async def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        """initialize (answered on the stream), then notifications/initialized; the result."""
        assert (await self.post(init_body(version))).status_code == 202
        answer = await self.next()
        note = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status_code == 202
        result: dict[str, Any] = answer["result"]
        return result


@contextlib.asynccontextmanager
async def open_stream(http: httpx.AsyncClient, base: str, **headers: str) -> AsyncIterator[LegacyStream]:
    """GET /sse and read its `endpoint` event."""
    async with http.stream("GET", base + "/sse", headers={"accept": "text/event-stream", **headers}) as got:
        assert got.status_code == 200, await got.aread()
        assert got.headers["content-type"].startswith("text/event-stream")
        stream = LegacyStream(http, base, got, "")
        with anyio.fail_after(10):
            (first,) = await stream.reader.read(1)
        assert first["event"] == "endpoint"
        stream.endpoint = first["data"]
        yield stream


class AsgiStream:
    """GET /sse driven in-process: `send` records the body and blocks while `gate` is clear (a client
    that stopped reading); `leave()` is the client disconnecting."""

    def __init__(self, app: StreamableHTTPServer, *, root_path: str = "", **headers: str) -> None:
        self.app = app
        self.body = b""
        self.status: int | None = None
        self.gate = asyncio.Event()
        self.gate.set()
        self.grew = asyncio.Event()
        self._gone = asyncio.Event()
        raw = [(b"host", b"127.0.0.1:8000"), (b"accept", b"text/event-stream")]
        raw += [(k.encode(), v.encode()) for k, v in headers.items()]
        self.scope = _scope("GET", root_path + "/sse", raw, root_path=root_path)

    async def run(self) -> None:
        """The whole response (returns once it ends)."""
        await self.app(self.scope, self._receive, self._send)

    async def _receive(self) -> dict[str, Any]:
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            return
        await self.gate.wait()
        self.body += message.get("body", b"")
        self.grew.set()

    def leave(self) -> None:
        self._gone.set()

    async def wait_for(self, needle: bytes) -> None:
        """Until the body written so far holds `needle`."""
        with anyio.fail_after(10):
            while needle not in self.body:
                self.grew.clear()
                await self.grew.wait()

    def events(self) -> list[dict[str, Any]]:
        """The `message` events written so far, decoded."""
        return [json.loads(e["data"]) for e in sse_events(self.body.decode()) if e.get("event") == "message"]

    @property
    def endpoint(self) -> str:
        return sse_events(self.body.decode())[0]["data"]


def _scope(
    method: str, target: str, headers: list[tuple[bytes, bytes]], *, root_path: str = ""
) -> dict[str, Any]:
    path, _, query = target.partition("?")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": root_path,
        "headers": headers,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
    }


async def asgi_post(app: StreamableHTTPServer, target: str, body: Any) -> tuple[int, bytes]:
    """POST a JSON value in-process; the status and the body of the answer."""
    data = json.dumps(body).encode()
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")]
    sent = False
    status = 0
    answer = b""

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, answer
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            answer += message.get("body", b"")

    await app(_scope("POST", target, headers), receive, send)
    return status, answer
