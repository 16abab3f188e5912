"""Helpers of the listen/remote proxy tests: run `mcpframe proxy` (or a server) as a child, find its URL."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests._process import stop_child

import mcpframe
from mcpframe.http.options import HttpOptions
from mcpframe.http.pipe import Pipe
from mcpframe.http.server import serve_http
from mcpframe.http.streams import Stream
from mcpframe.proxy import ProxyOptions
from mcpframe.proxy.listen import ListenServer, http_options_for, serve_listen

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = str(ROOT / "examples" / "everything.py")
SERVE_EVERYTHING = [sys.executable, "-m", "mcpframe", "serve", EVERYTHING]
TS_ENTRY = (
    ROOT / ".cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
_URL = re.compile(r"Streamable HTTP on (\S+)")

BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
JSON_ONLY = {"accept": "application/json", "content-type": "application/json"}


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment, with this mcpframe tree first and the selected core backend kept."""
    package_root = str(Path(mcpframe.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ)
    env.update(PYTHONPATH=path, MCPFRAME_BACKEND=os.environ.get("MCPFRAME_BACKEND", "auto"), **extra)
    return env


@contextlib.contextmanager
def running(command: Sequence[str], *, timeout: float = 30.0, **env: str) -> Iterator[str]:
    """Run `command` (an `mcpframe proxy --listen` or `mcpframe serve --http`) and yield the URL it prints
    on stderr; its later stderr is drained (a full pipe would stall it); stopped with SIGTERM after."""
    child = subprocess.Popen(
        list(command), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env(**env)
    )
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            match = _URL.search(line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
            elif not found:
                found_lines.append(line)
        ready.set()

    found_lines: list[str] = []
    threading.Thread(target=read, daemon=True).start()
    try:
        ready.wait(timeout)
        if not found:
            raise RuntimeError(f"{command} printed no URL: {''.join(found_lines)[-2000:]}")
        yield found[0]
    finally:
        stop_child(child)


def listen_command(*upstream: str, flags: Sequence[str] = ()) -> list[str]:
    """`mcpframe proxy --listen http://127.0.0.1:0/mcp [flags] -- upstream...`."""
    proxy = [sys.executable, "-m", "mcpframe", "proxy", "--listen", "http://127.0.0.1:0/mcp", *flags]
    return [*proxy, "--", *upstream]


@dataclasses.dataclass
class Proxy:
    """A listening proxy served in this process: its URL, and its app (pool and sessions to look at)."""

    url: str
    app: ListenServer


@contextlib.asynccontextmanager
async def in_process_proxy(
    command: Sequence[str],
    *,
    pool_size: int = 4,
    http: HttpOptions | None = None,
    http_server: str = "mcpframe",
    **more: Any,
) -> AsyncIterator[Proxy]:
    """`mcpframe proxy --listen` in front of `command`, served in this process on a random port (by the
    lean server, or `http_server="uvicorn"`); `more`: other `ProxyOptions` (`multiplex="shared"`)."""
    options = ProxyOptions(
        listen="http://127.0.0.1:0/mcp",
        command=list(command),
        env=child_env(),
        pool_size=pool_size,
        http=http or HttpOptions(),
        **more,
    )
    app = ListenServer(options, http_options_for(options))
    ready = anyio.Event()
    found: list[str] = []

    def listening(url: str) -> None:
        found.append(url)
        ready.set()

    async def serve() -> None:
        upstream: Any = app.server
        await serve_http(
            upstream, port=0, options=app.options, ready=listening, app=app, http_server=http_server
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        with anyio.fail_after(10):
            await ready.wait()
        yield Proxy(found[0], app)
        tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def serving_listen(options: ProxyOptions, http_server: str) -> AsyncIterator[str]:
    """`serve_listen(options)` on `http_server` (`"mcpframe"` or `"uvicorn"`) in this process; its URL."""
    ready = anyio.Event()
    found: list[str] = []

    def on_ready(url: str) -> None:
        found.append(url)
        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_listen(options, ready=on_ready, http_server=http_server))
        with anyio.fail_after(10):
            await ready.wait()
        yield found[0]
        tg.cancel_scope.cancel()


async def open_session(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    """A 2025-11-25 session through the proxy at `url`, opened by a JSON-only client: the headers its
    requests carry (the session's, not the media types)."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    response = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, headers=JSON_ONLY
    )
    assert response.status_code == 200, response.text
    headers = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=done, headers={**JSON_ONLY, **headers})).status_code == 202
    return headers


def rpc(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    """A JSON-RPC request (`params` `{}` unless given)."""
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


def modern_call(tool: str, rid: int, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """A 2026-07-28 `tools/call` of `tool` (`meta`: more `_meta`, e.g. `progressToken`)."""
    params = {"name": tool, "arguments": arguments, "_meta": {**MODERN_META, **meta}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def modern_headers(tool: str) -> dict[str, str]:
    """The headers of a 2026-07-28 `tools/call` of `tool` by a client that takes JSON and SSE."""
    return {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }


# A shared child for the stateless bridge: each `tools/call` sends progress with the token it got (if any),
# then by tool name: "answer" answers (`seen`: the id and the token as the child got them), "exit" exits with
# status 3, any other name ("hang") gets no answer.
_TOOLS_CHILD = r"""
import json, sys
def out(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") != "tools/call":
        continue
    token = message["params"]["_meta"].get("progressToken")
    if token is not None:
        params = {"progressToken": token, "progress": 1}
        out({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
    name = message["params"]["name"]
    if name == "answer":
        result = {"content": [], "seen": [message["id"], token]}
        out({"jsonrpc": "2.0", "id": message["id"], "result": result})
    elif name == "exit":
        sys.exit(3)
"""


def tools_child(folder: Path) -> list[str]:
    """The command that runs `_TOOLS_CHILD`, written into `folder`."""
    child = folder / "child.py"
    child.write_text(_TOOLS_CHILD)
    return [sys.executable, str(child)]


def dechunk(raw: bytes) -> bytes:
    """The body of one chunked HTTP/1.1 response (head included in `raw`), up to its last chunk."""
    rest = raw.split(b"\r\n\r\n", 1)[1]
    body = b""
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            return body
        body, rest = body + rest[:size], rest[size + 2 :]


def attached_pipes(monkeypatch: pytest.MonkeyPatch) -> list[Pipe]:
    """The pipe of every SSE response a `Stream` is attached to from now on (for the test's length)."""
    attached: list[Pipe] = []
    real = Stream.attach

    async def attach(self: Stream, *, retry_ms: int | None) -> Pipe:
        pipe = await real(self, retry_ms=retry_ms)
        attached.append(pipe)
        return pipe

    monkeypatch.setattr(Stream, "attach", attach)
    return attached
