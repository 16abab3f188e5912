"""The legacy HTTP+SSE transport (2024-11-05): mcpframe's server vs the official SDK's (mcp 2.3.0).

Each server runs in its own child process on 127.0.0.1 (random port) with one trivial tool, `add(a, b)`:
mcpframe's `StreamableHTTPServer` (which serves `/sse` beside `/mcp`) and the SDK's `MCPServer.sse_app()`,
both under uvicorn. Two modes:

- `load` (default): N clients open their streams, check one answer each, then call `add` back to back,
  `calls` times each, all at once. The client is the SDK's `sse_client` + `ClientSession` for both servers
  (so the servers are compared), and with `--clients-kind sdk,mcpframe` also mcpframe's `connect_sse`.
  Per row: requests/s over the whole run, p50 and p99 latency, CPU ms per call of the client process and
  of the server process (/proc utime + stime; steadier than the timings on a shared machine).
- `leak`: `--connects` times (default 1,000) a client opens `/sse`, initializes, and drops its stream; the
  server's RSS (/proc VmRSS) after a warm-up of 100, after the first `--connects`, and after as many again.
  A leak shows as growth between the second and third figure; the last dropped session must answer 404.
- `in-process`: mcpframe's app alone, driven in this process (GET /sse and the POSTs straight into the ASGI
  app, no sockets, no HTTP parser, no client), `--calls` sequential calls: CPU ms per call, the steadiest
  figure of the server's own cost (compare `bench_http.py --in-process`).

    .venv/bin/python benches/bench_sse.py [--mode load|leak|in-process] [--clients 8] [--calls 100]
                                          [--clients-kind sdk,mcpframe] [--servers mcpframe,sdk]
                                          [--connects 1000] [--repeat 1]

Under pytest (`--benchmark-disable`, the default) `test_sse_servers_answer` runs the load mode once with
2 clients x 3 calls, `test_in_process_driver_answers` 3 calls in process and `test_leak_mode_runs` the
leak mode with 20 connects, as tests.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from mcpframe import core  # noqa: E402
from servers.procs import process_cpu  # noqa: E402

SERVERS = ("mcpframe", "sdk")
CLIENTS = ("sdk", "mcpframe")
Add = Callable[[int, int], Awaitable[Any]]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "b", "version": "1"},
    },
}


# ---------------------------------------------------------------------------------------------- the servers


def _mcpframe_app() -> Any:
    from mcpframe.http.server import StreamableHTTPServer  # noqa: PLC0415
    from mcpframe.server import Server  # noqa: PLC0415

    server = Server("bench-sse", version="1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return StreamableHTTPServer(server).app


def _serve(name: str) -> None:
    """A child: `name`'s server on a free port; prints `URL <sse url>` once listening."""
    import uvicorn  # noqa: PLC0415

    if name == "mcpframe":
        app: Any = _mcpframe_app()
    else:
        from mcp.server.mcpserver import MCPServer  # noqa: PLC0415

        sdk = MCPServer("bench-sse", version="1.0.0", log_level="WARNING")

        @sdk.tool(name="add")
        def sdk_add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        app = sdk.sse_app()
    # IPPROTO_TCP: asyncio sets TCP_NODELAY only on such sockets (see bench_http.py)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"URL http://127.0.0.1:{sock.getsockname()[1]}/sse", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


@contextmanager
def server_process(name: str) -> Iterator[tuple[str, int]]:
    """`name`'s server in a child process (this file with `--serve`); yields (SSE URL, pid)."""
    path = os.pathsep.join(p for p in (str(ROOT / "python"), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "MCPFRAME_BACKEND": core.BACKEND}
    command = [sys.executable, __file__, "--serve", name]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("URL "):
            raise RuntimeError(f"the {name} server did not start: {line!r}")
        yield line.split()[1], child.pid
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def process_rss(pid: int) -> int:
    """Resident set size in KiB (/proc VmRSS); 0 where /proc is not available."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


# ---------------------------------------------------------------------------------------------- load


@dataclasses.dataclass
class Row:
    """One measured configuration."""

    client: str
    server: str
    clients: int
    calls: int = 0
    seconds: float = 0.0
    latencies: list[float] = dataclasses.field(default_factory=list)
    cpu: float = 0.0  # CPU seconds of this (the clients') process during the timed run
    server_cpu: float = 0.0  # CPU seconds of the server process during the timed run

    @property
    def rps(self) -> float:
        """Requests per second over the whole timed run."""
        return self.calls / self.seconds

    def percentile(self, fraction: float) -> float:
        """Latency at `fraction` (0..1), in milliseconds."""
        ordered = sorted(self.latencies)
        return 1000 * ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _text_value(content: Any) -> int:
    return int(content[0]["text"] if isinstance(content[0], dict) else content[0].text)


@asynccontextmanager
async def open_client(kind: str, url: str) -> AsyncIterator[Add]:
    """A connected client of `kind` over the legacy transport; yields `add(a, b) -> the tool's answer`."""
    if kind == "mcpframe":
        from mcpframe.http import connect_sse  # noqa: PLC0415 - SSE-C's client, where it exists

        async with connect_sse(url) as client:

            async def add(a: int, b: int) -> Any:
                return _text_value((await client.call_tool("add", {"a": a, "b": b}))["content"])

            yield add
        return
    from mcp import ClientSession  # noqa: PLC0415
    from mcp.client.sse import sse_client  # noqa: PLC0415

    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def sdk_add(a: int, b: int) -> Any:
            return _text_value((await session.call_tool("add", {"a": a, "b": b})).content)

        yield sdk_add


async def _calls(add: Add, count: int, latencies: list[float]) -> None:
    for i in range(count):
        start = time.perf_counter()
        answer = await add(i, 1)
        latencies.append(time.perf_counter() - start)
        if answer != i + 1:
            raise AssertionError(f"add({i}, 1) answered {answer!r}")


async def measure(url: str, pid: int, row: Row, *, calls: int, max_seconds: float) -> Row:
    """Connect `row.clients` clients, check an answer on each, then time `calls` calls per client."""
    with anyio.fail_after(max_seconds):
        async with AsyncExitStack() as stack:
            adds = [await stack.enter_async_context(open_client(row.client, url)) for _ in range(row.clients)]
            for add in adds:  # the output check, before anything is timed
                assert await add(2, 3) == 5
            start, cpu, server_cpu = time.perf_counter(), time.process_time(), process_cpu(pid)
            async with anyio.create_task_group() as tg:
                for add in adds:
                    tg.start_soon(_calls, add, calls, row.latencies)
            row.seconds = time.perf_counter() - start
            row.cpu = time.process_time() - cpu
            row.server_cpu = process_cpu(pid) - server_cpu
    row.calls = row.clients * calls
    return row


def run_load(
    kinds: list[str], servers: list[str], clients: int, calls: int, *, max_seconds: float, repeat: int = 1
) -> list[Row]:
    """Every client x server (one server process alive at a time), `repeat` interleaved rounds, keeping
    each configuration's best run (the machine is shared)."""
    best: dict[tuple[str, str], Row] = {}
    for _ in range(repeat):
        for kind in kinds:
            for server in servers:
                with server_process(server) as (url, pid):
                    row = Row(kind, server, clients)
                    anyio.run(lambda: measure(url, pid, row, calls=calls, max_seconds=max_seconds))  # noqa: B023
                key = (kind, server)
                if key not in best or row.rps > best[key].rps:
                    best[key] = row
    return list(best.values())


def load_table(rows: list[Row]) -> str:
    """The rows side by side."""
    lines = [
        f"Legacy HTTP+SSE, tools/call add on 127.0.0.1, mcpframe core backend: {core.BACKEND}",
        f"{'client':<9} {'server':<9} {'clients':>7} {'calls':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'CPU ms/call: client':>19} {'server':>6}",
    ]
    for r in rows:
        lines.append(
            f"{r.client:<9} {r.server:<9} {r.clients:>7} {r.calls:>6} {r.rps:>8.0f} "
            f"{r.percentile(0.5):>8.2f} {r.percentile(0.99):>8.2f} "
            f"{1000 * r.cpu / r.calls:>19.2f} {1000 * r.server_cpu / r.calls:>6.2f}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- leak


async def connect_and_drop(http: httpx.AsyncClient, url: str) -> str:
    """Open a stream, initialize over it (the answer read from the stream), drop it; the POST URL."""
    base = url.rsplit("/", 1)[0]
    async with http.stream("GET", url, headers={"accept": "text/event-stream"}) as stream:
        lines = stream.aiter_lines()
        endpoint = ""
        async for line in lines:
            if line.startswith("data: "):
                endpoint = line[len("data: ") :]
                break
        posted = await http.post(base + endpoint, json=INIT)
        if posted.status_code != 202:
            raise AssertionError(f"initialize answered {posted.status_code}")
        async for line in lines:
            if line.startswith("data: ") and '"protocolVersion"' in line:
                break
    return base + endpoint


async def leak(url: str, pid: int, connects: int) -> tuple[int, int, int, int]:
    """RSS (KiB) after a warm-up, after `connects`, after `connects` more; and the status of a POST to the
    last dropped session (404 once the server has ended it)."""
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(100):
            await connect_and_drop(http, url)
        warm = process_rss(pid)
        for _ in range(connects):
            await connect_and_drop(http, url)
        first = process_rss(pid)
        for _ in range(connects):
            last = await connect_and_drop(http, url)
        second = process_rss(pid)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        with anyio.fail_after(10):
            while (status := (await http.post(last, json=ping)).status_code) == 202:
                await anyio.sleep(0.01)  # the server ends the session once it sees the disconnect
    return warm, first, second, status


def run_leak(servers: list[str], connects: int) -> str:
    """The leak mode's table."""
    lines = [
        f"Legacy HTTP+SSE, {connects} connect+initialize+disconnect rounds, server RSS (KiB), "
        f"mcpframe core backend: {core.BACKEND}",
        f"{'server':<9} {'warm':>8} {f'+{connects}':>8} {f'+{2 * connects}':>8} {'2nd round':>10} "
        f"{'dropped session POST':>21}",
    ]
    for server in servers:
        with server_process(server) as (url, pid):
            warm, first, second, status = anyio.run(leak, url, pid, connects)
        lines.append(f"{server:<9} {warm:>8} {first:>8} {second:>8} {second - first:>+10} {status:>21}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- in process


def _scope(method: str, target: str) -> dict[str, Any]:
    path, _, query = target.partition("?")
    headers = [(b"host", b"127.0.0.1:8000"), (b"accept", b"text/event-stream")]
    if method == "POST":
        headers.append((b"content-type", b"application/json"))
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000),
    }  # fmt: skip


async def _post(app: Any, target: str, body: bytes) -> int:
    """One POST straight into the ASGI app; its status."""
    sent: list[dict[str, Any]] = [{"type": "http.request", "body": body, "more_body": False}]
    status = 0

    async def receive() -> dict[str, Any]:
        if sent:
            return sent.pop()
        await anyio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(_scope("POST", target), receive, send)
    return status


class _Stream:
    """GET /sse straight into the ASGI app: what it wrote so far, and a wait for a needle in it."""

    def __init__(self) -> None:
        self.body = bytearray()
        self.grew = asyncio.Event()
        self.gone = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            self.body += message.get("body", b"")
            self.grew.set()

    async def until(self, needle: bytes) -> bytes:
        """Wait until `needle` was written; return what came before it (and forget it)."""
        while (at := self.body.find(needle)) < 0:
            self.grew.clear()
            await self.grew.wait()
        before = bytes(self.body[:at])
        del self.body[: at + len(needle)]
        return before


async def in_process(calls: int) -> float:
    """CPU ms per `add` call of mcpframe's legacy SSE server alone: no sockets, no HTTP parser, no client."""
    app = _mcpframe_app()
    stream = _Stream()
    async with anyio.create_task_group() as tg:
        tg.start_soon(app, _scope("GET", "/sse"), stream.receive, stream.send)
        await stream.until(b"event: endpoint\ndata: ")
        target = (await stream.until(b"\n\n")).decode()
        assert await _post(app, target, json.dumps(INIT).encode()) == 202
        await stream.until(b'"protocolVersion"')
        assert await _post(app, target, core.encode_notification("notifications/initialized")) == 202
        cpu = time.process_time()
        for rid in range(2, calls + 2):
            body = core.encode_request(rid, "tools/call", {"name": "add", "arguments": {"a": rid, "b": 1}})
            assert await _post(app, target, body) == 202
            answer = await stream.until(b'"id":%d,"result"' % rid) + await stream.until(b"\n\n")
            if b'"text":"%d"' % (rid + 1) not in answer + bytes(stream.body):
                raise AssertionError(f"add({rid}, 1) answered {answer!r}")
        spent = time.process_time() - cpu
        stream.gone.set()
    return 1000 * spent / calls


# ---------------------------------------------------------------------------------------------- entry points


def test_sse_servers_answer() -> None:
    """The load mode once, small: both servers start, answer correctly, and the table renders."""
    rows = run_load(["sdk"], list(SERVERS), clients=2, calls=3, max_seconds=60)
    assert [(r.client, r.server) for r in rows] == [("sdk", s) for s in SERVERS]
    assert all(len(r.latencies) == 6 for r in rows)
    assert "req/s" in load_table(rows)


def test_in_process_driver_answers() -> None:
    """The in-process mode checks every answer."""
    assert anyio.run(in_process, 3) > 0


def test_leak_mode_runs() -> None:
    """The leak mode, tiny: every round initializes, and the dropped session is gone (404)."""
    out = run_leak(["mcpframe"], 20)
    assert out.splitlines()[-1].split()[-1] == "404"


def main(argv: list[str]) -> int:
    """`--serve NAME` (a child) or the benchmark runner."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--serve", choices=SERVERS)
    parser.add_argument("--mode", choices=("load", "leak", "in-process"), default="load")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=100, help="calls per client")
    parser.add_argument("--clients-kind", default="sdk", help="sdk, mcpframe or both: sdk,mcpframe")
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--connects", type=int, default=1000)
    parser.add_argument("--max-seconds", type=float, default=300.0)
    parser.add_argument("--repeat", type=int, default=1, help="rounds; each row keeps its best run")
    parser.add_argument("--json-out", default=None, help="also write the load rows as JSON here")
    args = parser.parse_args(argv)
    if args.serve is not None:
        _serve(args.serve)
        return 0
    kinds = [k for k in args.clients_kind.split(",") if k]
    servers = [s for s in args.servers.split(",") if s]
    if not set(kinds) <= set(CLIENTS) or not set(servers) <= set(SERVERS):
        parser.error("--clients-kind: sdk,mcpframe; --servers: mcpframe,sdk")
    if args.mode == "leak":
        print(run_leak(servers, args.connects))
        return 0
    if args.mode == "in-process":
        best = min(anyio.run(in_process, args.calls) for _ in range(max(1, args.repeat)))
        print(f"legacy SSE, mcpframe server app in process ({core.BACKEND} core): {best:.3f} CPU ms/call")
        return 0
    rows = run_load(
        kinds, servers, args.clients, args.calls, max_seconds=args.max_seconds, repeat=max(1, args.repeat)
    )
    print(load_table(rows))
    if args.json_out:
        data = [dataclasses.asdict(r) | {"rps": r.rps} for r in rows]
        Path(args.json_out).write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
