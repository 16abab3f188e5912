"""Streamable HTTP: mcpframe's server vs the official SDK's (mcp 2.3.0), under N concurrent clients.

Each server runs in its own child process on 127.0.0.1 (random port) with one trivial tool, `add(a, b)`.
N `Client.http` clients (mcpframe's HTTP client, the same for both servers) connect, check one answer each,
then call `add` back to back, `calls` times each, all clients at once. Reported per server shape:
requests/s over the whole run, p50 and p99 of the per-call latency.

Shapes: `sse` (2025-11-25 session, answers as SSE streams: both servers' default), `json` (2025-11-25
session, JSON answers: mcpframe `response_mode="auto"`, SDK `json_response=True`), `modern` (2026-07-28,
stateless, whatever each server answers by default).

    .venv/bin/python benches/bench_http.py [--clients 8] [--calls 100] [--shapes sse,json,modern]

prints a table (bounded: `--max-seconds` per run, loopback only). Under pytest (`--benchmark-disable`, the
default) `test_http_servers_answer` runs each configuration once with 2 clients x 3 calls, as a test.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from mcpframe import core  # noqa: E402
from mcpframe.client import Client  # noqa: E402

SERVERS = ("mcpframe", "sdk")
SHAPES = ("sse", "json", "modern")


# ---------------------------------------------------------------------------------------------- the servers


def _listening_socket() -> socket.socket:
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and accepted
    # sockets inherit it. With proto 0, uvicorn's separate header and body writes meet Nagle + delayed ACK:
    # ~40 ms per response on loopback.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    return sock


def _uvicorn(app: Any, sock: socket.socket) -> None:
    import uvicorn  # noqa: PLC0415

    print(f"URL http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def _serve_mcpframe(json_answers: bool) -> None:
    from mcpframe.server import Server  # noqa: PLC0415
    from mcpframe.transports.http.server import HttpOptions, StreamableHTTPServer  # noqa: PLC0415

    server = Server("bench-http", version="1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    options = HttpOptions(response_mode="auto" if json_answers else "resumable")
    _uvicorn(StreamableHTTPServer(server, options).app, _listening_socket())


def _serve_sdk(json_answers: bool) -> None:
    from mcp.server.mcpserver import MCPServer  # noqa: PLC0415

    server = MCPServer("bench-http", version="1.0.0", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    _uvicorn(server.streamable_http_app(json_response=json_answers), _listening_socket())


@contextmanager
def server_process(name: str, shape: str) -> Iterator[str]:
    """`name`'s server for `shape` in a child process (this file with `--serve`); yields its URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python"), "MCPFRAME_BACKEND": core.BACKEND}
    command = [sys.executable, __file__, "--serve", name, *(["--json"] if shape == "json" else [])]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("URL "):
            raise RuntimeError(f"the {name} server did not start: {line!r}")
        yield line.split()[1]
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# ---------------------------------------------------------------------------------------------- the load


@dataclasses.dataclass
class Row:
    """One measured configuration."""

    server: str
    shape: str
    clients: int
    calls: int
    seconds: float
    latencies: list[float]

    @property
    def rps(self) -> float:
        """Requests per second over the whole timed run."""
        return self.calls / self.seconds

    def percentile(self, fraction: float) -> float:
        """Latency at `fraction` (0..1), in milliseconds."""
        ordered = sorted(self.latencies)
        return 1000 * ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _value(result: dict[str, Any]) -> Any:
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and "result" in structured:
        return structured["result"]
    return int(result["content"][0]["text"])


async def _calls(client: Client, count: int, latencies: list[float]) -> None:
    for i in range(count):
        start = time.perf_counter()
        result = await client.call_tool("add", {"a": i, "b": 1})
        latencies.append(time.perf_counter() - start)
        if _value(result) != i + 1:
            raise AssertionError(f"add({i}, 1) answered {result!r}")


async def measure(url: str, server: str, shape: str, *, clients: int, calls: int, max_seconds: float) -> Row:
    """Connect `clients` clients, check an answer on each, then time `calls` calls per client."""
    mode = "modern" if shape == "modern" else "legacy"
    latencies: list[float] = []
    with anyio.fail_after(max_seconds):
        async with AsyncExitStack() as stack:
            opened = [await stack.enter_async_context(Client.http(url, mode=mode)) for _ in range(clients)]
            for client in opened:  # the output check, before anything is timed
                assert _value(await client.call_tool("add", {"a": 2, "b": 3})) == 5
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for client in opened:
                    tg.start_soon(_calls, client, calls, latencies)
            seconds = time.perf_counter() - start
    return Row(server, shape, clients, clients * calls, seconds, latencies)


def run(shapes: list[str], clients: int, calls: int, max_seconds: float) -> list[Row]:
    """Every server x shape, one after the other (one server process alive at a time)."""
    rows = []
    for shape in shapes:
        for server in SERVERS:
            with server_process(server, shape) as url:
                limits = {"clients": clients, "calls": calls, "max_seconds": max_seconds}
                rows.append(anyio.run(lambda: measure(url, server, shape, **limits)))  # noqa: B023
    return rows


def table(rows: list[Row]) -> str:
    """The rows side by side, one line per server and shape."""
    lines = [
        f"Streamable HTTP, tools/call add, client: mcpframe Client.http, core backend: {core.BACKEND}",
        f"{'shape':<8} {'server':<10} {'clients':>7} {'calls':>6} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}",
    ]
    for r in rows:
        lines.append(
            f"{r.shape:<8} {r.server:<10} {r.clients:>7} {r.calls:>6} {r.rps:>9.0f} "
            f"{r.percentile(0.5):>8.2f} {r.percentile(0.99):>8.2f}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- entry points


def test_http_servers_answer() -> None:
    """Each configuration once, small: the servers start, answer correctly, and the table renders."""
    rows = run(list(SHAPES), clients=2, calls=3, max_seconds=60)
    assert [(r.server, r.shape) for r in rows] == [(s, shape) for shape in SHAPES for s in SERVERS]
    assert all(len(r.latencies) == 6 for r in rows)
    assert "req/s" in table(rows)


def main(argv: list[str]) -> int:
    """`--serve NAME [--json]` (a child) or the benchmark runner."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--serve", choices=SERVERS)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=100, help="calls per client")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--max-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)
    if args.serve == "mcpframe":
        _serve_mcpframe(args.json)
        return 0
    if args.serve == "sdk":
        _serve_sdk(args.json)
        return 0
    shapes = [s for s in args.shapes.split(",") if s]
    if not set(shapes) <= set(SHAPES) or args.clients < 1 or args.calls < 1:
        parser.error(f"--shapes takes {','.join(SHAPES)}; --clients and --calls must be positive")
    print(table(run(shapes, args.clients, args.calls, args.max_seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
