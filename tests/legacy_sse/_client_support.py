"""Servers for the legacy SSE client tests: a scripted legacy server (ASGI, on a live uvicorn), the SDK's
`.sse_app()` and server-everything's SSE mode in child processes, and a request counter for any ASGI app.

`FakeLegacy` plays the 2024-11-05 transport by the book unless told otherwise (no endpoint event, an
endpoint elsewhere, refused POSTs, a stream that ends), answers a few methods itself, and records every
HTTP request as `(verb, path)` so a test can assert exactly what the client did on the wire.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from tests._process import stop_child

SDK_SSE_SERVER = Path(__file__).with_name("client_sdk_sse_server.py")
ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = (
    ROOT / ".cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)

ASGIApp = Callable[[Any, Any, Any], Any]


def init_result(version: str = "2024-11-05") -> dict[str, Any]:
    """What a legacy server answers to initialize."""
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "fake", "version": "1"},
    }


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The fake server's answer to a request: initialize, ping and the `add` tool; `hang` never answers."""
    rid, method = message.get("id"), message.get("method")
    if rid is None or method is None:
        return None
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": rid, "result": init_result()}
    if method == "tools/call" and message["params"]["name"] == "add":
        args = message["params"]["arguments"]
        content = [{"type": "text", "text": str(args["a"] + args["b"])}]
        return {"jsonrpc": "2.0", "id": rid, "result": {"content": content}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method == "tools/call":
        return None  # `hang`
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}}


class FakeLegacy:
    """A scripted legacy SSE server on `/sse` + `/messages/` (see the module doc).

    `endpoint`: the data of the `endpoint` event (`None`: never sent); `refuse(path, body)`: a status to
    answer a POST with instead of 202 (`None`: accept); a POST to `/sse` gets `probe_status` (405, as
    Starlette's route does); `endless`: a refusal's body never ends.
    """

    def __init__(
        self,
        *,
        endpoint: str | None = "/messages/?session_id=abc",
        refuse: Callable[[str, Any], int | None] = lambda path, body: None,
        probe_status: int = 405,
        endless: bool = False,
    ) -> None:
        self.endpoint = endpoint
        self.endless = endless
        self.refuse = refuse
        self.probe_status = probe_status
        self.seen: list[tuple[str, str]] = []
        self.bodies: list[Any] = []
        self.posted = anyio.Event()  # a POST to /messages/ carried a tools/call
        self._out, self._in = anyio.create_memory_object_stream[bytes](100)

    def end_stream(self) -> None:
        """End the open SSE stream (as a server that drops its clients)."""
        self._out.close()

    async def send_raw(self, data: bytes) -> None:
        """Write `data` on the open SSE stream as it is (no event framing added)."""
        await self._out.send(data)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path, verb = scope["path"], scope["method"]
        self.seen.append((verb, path))
        if verb == "GET" and path == "/sse":
            await self._stream(receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        parsed = json.loads(body) if body else None
        self.bodies.append(parsed)
        if path == "/messages/":
            status = self.refuse(path, parsed) or 202
            if isinstance(parsed, dict) and parsed.get("method") == "tools/call":
                self.posted.set()
            reply = answer(parsed) if status == 202 and isinstance(parsed, dict) else None
            if reply is not None:
                await self._out.send(b"event: message\ndata: " + json.dumps(reply).encode() + b"\n\n")
        else:
            status = self.probe_status
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]}
        )
        if status >= 300 and self.endless:
            await _endless(receive, send)
            return
        await send({"type": "http.response.body", "body": b"Accepted" if status == 202 else b"nope"})

    async def _stream(self, receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if self.endpoint is not None:
            first = f"event: endpoint\ndata: {self.endpoint}\n\n".encode()
            await send({"type": "http.response.body", "body": first, "more_body": True})
        else:
            await send({"type": "http.response.body", "body": b": hello\n\n", "more_body": True})
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            async for chunk in self._in:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            tg.cancel_scope.cancel()


async def _endless(receive: Any, send: Any) -> None:
    """A body that never ends, until the client hangs up."""
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        while True:
            await send({"type": "http.response.body", "body": b"nope " * 1000, "more_body": True})
            await anyio.lowlevel.checkpoint()  # a send to a gone client may not yield: let `watch` run


class Counted:
    """Wraps an ASGI app and records `(verb, path, has a session id)` of every HTTP request it gets."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[tuple[str, str, bool]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            names = {name.lower() for name, _ in scope["headers"]}
            self.seen.append((scope["method"], scope["path"], b"mcp-session-id" in names))
        await self.app(scope, receive, send)


@contextlib.contextmanager
def sdk_sse_server() -> Iterator[str]:
    """The official SDK's `.sse_app()` in a child process; yields its base URL (no path)."""
    child = subprocess.Popen(
        [sys.executable, str(SDK_SSE_SERVER)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("URL "):
            raise RuntimeError(f"the SDK SSE server did not start: {line!r}")
        yield line.split()[1]
    finally:
        stop_child(child)


def everything_missing() -> str | None:
    """Why server-everything cannot run here (`None` when it can)."""
    if not EVERYTHING.exists() or shutil.which("node") is None:
        return f"server-everything is not installed at {EVERYTHING}: run `bash scripts/install-test-peers.sh`"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def everything_sse() -> Iterator[str]:
    """server-everything in its SSE mode (`node dist/index.js sse`, port from `PORT`); yields its base URL
    once it says it listens (a line on stderr)."""
    port = _free_port()  # it prints the port it was given, not the one it got: pick one for it
    env = {**os.environ, "PORT": str(port)}
    child = subprocess.Popen(
        ["node", str(EVERYTHING), "sse"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stderr is not None
        for line in child.stderr:
            if "running on port" in line:
                break
        else:
            raise RuntimeError("server-everything (sse) ended before listening")
        # keep reading its stderr (a log line per message) so that it never blocks on a full pipe
        threading.Thread(target=child.stderr.read, daemon=True).start()
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_child(child)
