"""Servers for the HTTP client tests: a scripted ASGI endpoint on a live uvicorn, and the SDK's server.

`Scripted` records every HTTP request it gets (`seen`) and answers with what the test's `handler` returns, so
a test can assert exactly what the client put on the wire and play any server behaviour (expired sessions,
closed streams, error statuses).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from tests._process import stop_child

from mcpframe import core

SDK_SERVER = Path(__file__).with_name("client_sdk_server.py")


@dataclasses.dataclass
class Seen:
    """One HTTP request as the server got it."""

    verb: str
    headers: dict[str, str]
    body: Any  # the decoded JSON body, None when empty
    at: float  # time.monotonic() on arrival

    @property
    def method(self) -> str | None:
        """The JSON-RPC method of the body (None for responses and bodiless requests)."""
        return self.body.get("method") if isinstance(self.body, dict) else None


@dataclasses.dataclass
class Reply:
    """What the scripted server answers: a status, headers and a body (bytes or an async chunk iterator)."""

    status: int = 200
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    body: bytes | AsyncIterator[bytes] = b""


Handler = Callable[[Seen], Awaitable[Reply]]


def json_reply(message: Any, status: int = 200, **headers: str) -> Reply:
    """A JSON body."""
    return Reply(status, {"content-type": "application/json", **headers}, json.dumps(message).encode())


def sse_reply(events: AsyncIterator[bytes], **headers: str) -> Reply:
    """An SSE body from an async iterator of already formatted events."""
    return Reply(200, {"content-type": "text/event-stream", **headers}, events)


def event(message: Any = None, *, id: str | None = None, retry: int | None = None) -> bytes:
    """One SSE event (`data:` empty when message is None: a priming event)."""
    lines = []
    if id is not None:
        lines.append(f"id: {id}")
    if retry is not None:
        lines.append(f"retry: {retry}")
    lines.append("data: " + ("" if message is None else json.dumps(message)))
    return ("\n".join(lines) + "\n\n").encode()


def result(rid: Any, value: Any) -> dict[str, Any]:
    """A JSON-RPC result."""
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def init_result(version: str = "2025-11-25") -> dict[str, Any]:
    """What a server answers to initialize."""
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    }


def init_request(rid: Any = 1, version: str = "2025-11-25") -> bytes:
    """A client's `initialize` request line."""
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    return core.encode_request(rid, "initialize", params) + b"\n"


def init_reply(seen: Seen, session: str) -> Reply:
    """The answer to the `initialize` request `seen`, opening session `session`."""
    return json_reply(result(seen.body["id"], init_result()), **{"mcp-session-id": session})


class Scripted:
    """An ASGI app that records requests and answers with `handler(seen)`."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.seen: list[Seen] = []
        self.disconnected = anyio.Event()  # set when a client goes away during a streamed body

    def by_method(self, method: str) -> list[Seen]:
        """The POSTs whose body has that JSON-RPC method."""
        return [s for s in self.seen if s.method == method]

    def verbs(self, verb: str) -> list[Seen]:
        """The requests with that HTTP verb."""
        return [s for s in self.seen if s.verb == verb]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        raw = b""
        more = True
        while more:
            message = await receive()
            raw += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        seen = Seen(scope["method"], headers, json.loads(raw) if raw else None, time.monotonic())
        self.seen.append(seen)
        reply = await self.handler(seen)
        pairs = [(k.encode(), v.encode()) for k, v in reply.headers.items()]
        await send({"type": "http.response.start", "status": reply.status, "headers": pairs})
        if isinstance(reply.body, bytes):
            await send({"type": "http.response.body", "body": reply.body})
            return
        body = reply.body
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                self.disconnected.set()
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            async for chunk in body:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def serve_asgi(app: Any, path: str = "/mcp") -> AsyncIterator[str]:
    """Run `app` on uvicorn at 127.0.0.1 (random port) in this event loop; yield the endpoint URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.serve(sockets=[sock]))
            yield f"http://127.0.0.1:{sock.getsockname()[1]}{path}"
            server.should_exit = True
            server.force_exit = True
    finally:
        sock.close()


@contextlib.contextmanager
def sdk_server(flags: Sequence[str] = ()) -> Iterator[str]:
    """The official SDK's Streamable HTTP server in a child process; yields its URL."""
    child = subprocess.Popen(
        [sys.executable, str(SDK_SERVER), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("URL "):
            raise RuntimeError(f"the SDK server did not start: {line!r}")
        yield line.split()[1]
    finally:
        stop_child(child)
