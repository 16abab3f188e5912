"""Helpers for the HTTP server tests: a small server, an in-process client, a live uvicorn, an SSE reader."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from mcpframe.http.server import HttpOptions, StreamableHTTPServer, serve_http
from mcpframe.server import Context, Server

HOST = "127.0.0.1:8000"
JSON_AND_SSE = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
MODERN = "2026-07-28"


def make_server() -> Server:
    """Tools that answer at once, report progress and log, ask the client, or wait to be released."""
    server = Server("http-test", version="1.0.0")
    server.gate = anyio.Event()  # type: ignore[attr-defined]
    server.started = anyio.Event()  # type: ignore[attr-defined]
    server.ended = anyio.Event()  # type: ignore[attr-defined]

    @server.tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Report progress and log before answering."""
        await ctx.report_progress(1, 2)
        await ctx.info("halfway")
        await ctx.report_progress(2, 2)
        return "done"

    @server.tool
    async def ask(prompt: str, ctx: Context) -> str:
        """Ask the client's model (sampling) and return its text."""
        result = await ctx.sample(
            [{"role": "user", "content": {"type": "text", "text": prompt}}], max_tokens=5
        )
        return str(result.get("content", {}).get("text"))

    @server.tool
    async def wait() -> str:
        """Wait until the test opens the gate."""
        server.started.set()  # type: ignore[attr-defined]
        try:
            await server.gate.wait()  # type: ignore[attr-defined]
        finally:
            server.ended.set()  # type: ignore[attr-defined]
        return "released"

    return server


def init_body(version: str = "2025-11-25", rid: int = 1, capabilities: Any = None) -> dict[str, Any]:
    """An initialize request."""
    params = {
        "protocolVersion": version,
        "capabilities": capabilities if capabilities is not None else {"sampling": {}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


def call(name: str, arguments: dict[str, Any] | None = None, rid: int = 2, **meta: Any) -> dict[str, Any]:
    """A tools/call request (with `_meta` if given)."""
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def modern_meta() -> dict[str, Any]:
    """The `_meta` keys of a 2026-07-28 request."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }


def sse_events(text: str) -> list[dict[str, str]]:
    """Parse a complete SSE body into events (fields `id`, `event`, `data`, `retry`); comments dropped."""
    events: list[dict[str, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            event[name] = event[name] + "\n" + value if name in event else value
        if event:
            events.append(event)
    return events


def messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (priming events skipped)."""
    return [json.loads(e["data"]) for e in sse_events(text) if e.get("data")]


@contextlib.asynccontextmanager
async def asgi_client(
    server: Server | None = None, **options: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, StreamableHTTPServer]]:
    """An httpx client wired to the ASGI app in-process (responses are read whole)."""
    http = StreamableHTTPServer(server or make_server(), HttpOptions(**options))
    async with http:
        transport = httpx.ASGITransport(app=http.app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{HOST}") as client:
            yield client, http


async def initialize(
    client: httpx.AsyncClient, version: str = "2025-11-25", *, url: str = "/mcp", **kw: Any
) -> str:
    """Initialize a session at `url` and send `initialized`; returns the session id."""
    response = await client.post(url, json=init_body(version, **kw), headers=JSON_AND_SSE)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ack = await client.post(url, json=note, headers=session_headers(session_id, version))
    assert ack.status_code == 202
    return session_id


async def open_session(client: httpx.AsyncClient, url: str, version: str = "2025-11-25") -> dict[str, str]:
    """Initialize a session at `url` for a client with no capabilities; the headers of a request in it."""
    session_id = await initialize(client, version, url=url, capabilities={})
    return session_headers(session_id, version)


def session_headers(session_id: str, version: str = "2025-11-25") -> dict[str, str]:
    """Headers of a request inside a session."""
    return {**JSON_AND_SSE, "mcp-session-id": session_id, "mcp-protocol-version": version}


@contextlib.asynccontextmanager
async def live_server(server: Server | None = None, **options: Any) -> AsyncIterator[tuple[str, Server]]:
    """A real uvicorn on 127.0.0.1 (random port) in this event loop; yields (endpoint URL, server)."""
    server = server or make_server()
    async with served(server, host="127.0.0.1", options=HttpOptions(**options)) as url:
        yield url, server


@contextlib.asynccontextmanager
async def served(server: Server, **serve: Any) -> AsyncIterator[str]:
    """`serve_http(server, port=0, **serve)` in a task of this event loop; yields the endpoint URL once it
    listens (within 10 seconds) and cancels the server on the way out."""
    ready: list[str] = []
    started = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        started.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_http(server, port=0, ready=on_ready, **serve))
        with anyio.fail_after(10):
            await started.wait()
        try:
            yield ready[0]
        finally:
            tg.cancel_scope.cancel()


def raw_post(url: str, headers: dict[str, str], body: Any) -> bytes:
    """A POST of `body` to `url` as HTTP/1.1 bytes (to write on a socket of the test's own)."""
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
    host = url.split("/")[2].encode()
    return b"POST /mcp HTTP/1.1\r\nhost: %s\r\n%scontent-length: %d\r\n\r\n%s" % (host, head, len(data), data)


class EventReader:
    """Reads SSE events from a streaming response, a few at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()

    async def read(self, count: int) -> list[dict[str, str]]:
        """The next `count` events (fewer if the stream ends first)."""
        events: list[dict[str, str]] = []
        event: dict[str, str] = {}
        async for line in self._lines:
            if line == "":
                if event:
                    events.append(event)
                    event = {}
                    if len(events) >= count:
                        break
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            event[name] = value.removeprefix(" ")
        return events


async def read_events(response: httpx.Response, count: int) -> list[dict[str, str]]:
    """Read events from a streaming SSE response until `count` have arrived (or the stream ends)."""
    return await EventReader(response).read(count)


def answer(response: httpx.Response) -> Any:
    """The JSON-RPC answer of a POST, whether it came as JSON or as the last message of an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return messages(response.text)[-1]
    return response.json()
