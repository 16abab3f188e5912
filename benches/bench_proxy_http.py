"""The proxy's HTTP bridges against direct connections: `--listen` (HTTP -> stdio) and remote (stdio -> HTTP).

Two tools, `add(a, b)` and `echo(text)`, served by mcpframe's `Server` (this file's `--serve-stdio`), on
127.0.0.1:

- `direct http`: `mcpframe serve --http` of the same server (the floor of the HTTP rows); `lean`: with
  `--http-server mcpframe` (its own HTTP/1.1 server, `http/wire.py`) instead of uvicorn;
- `listen`: `mcpframe proxy --listen http://127.0.0.1:0/mcp --http-server uvicorn -- python this-file
  --serve-stdio` (a child per session; `shared`: `--multiplex shared`, every session over one child, as
  mcp-proxy does; `modern`: 2026-07-28 requests over the shared child); `lean` as above (`--listen`'s
  default, with its fast path);
- `direct stdio`: the server on stdio, 5,000 calls pipelined by a raw client (the floor of the remote rows);
- `remote`: `mcpframe proxy URL` in front of `direct http lean` (one upstream for every remote row), driven
  on its stdin/stdout the same way; `remote full`: the same without its fast lane
  (`MCPFRAME_PROXY_FAST_LANE=0`: every request through the transport); `remote httpx`: the same with
  `MCPFRAME_HTTP_LEAN=0`; `remote baseline` (with `--baseline DIR`): the proxy of another tree of mcpframe
  (e.g. `git archive main python | tar -x -C DIR`, with the built `_core*.so` copied in), run with
  `PYTHONPATH=DIR/python`, so a change is measured against what it replaces in the same run; `listen lean
  baseline` (with `--baseline DIR` holding `benches/` too: `git archive main python benches`): `listen lean`
  of that tree, the proxy and its children (`DIR/benches/bench_proxy_http.py --serve-stdio`) both run there.

HTTP rows: 16 keep-alive sessions of a raw HTTP/1.1 client (`servers/http_wire_client.py`: one connection
per session, one `echo` call in flight each, no client library), the same client for every contender, so
the rows measure the servers and proxies, not the load generator. Every session's answer is parsed and
checked before timing; while timed, each answer's status and echoed text are checked. Each row is run
`--rounds` times, interleaved, and the medians are reported: calls/s, p50/p99 latency and the CPU time per
call of the proxy process (or of the server, for the floors) read from /proc (utime + stime, children not
included); for the `listen` rows also that of the proxy's children (the stdio servers it started, read
from /proc the same way: `upstream/child CPU us/call`). `--mcp-proxy PATH`: mcp-proxy's executable (0.13,
its own venv) for the same modes; its rows are skipped without it. `--rows a,b`: only those rows.

The HTTP rows are run once per tool of `--tools` (default `echo,aecho`), each named in the table's `tool`
column, every contender (mcp-proxy too) in front of the same child: `echo` is a `def` tool (the child runs
each call on a worker thread and back, which costs the child about twice the instructions and four times
the CPU of the call itself: `stdio_one_instructions.py`), `aecho` the same as `async def` (answered on the
child's event loop), so its rows show the proxies with less of the child in the way. The pipelined rows
call `add` (`def`) whatever `--tools` says.

    .venv/bin/python benches/bench_proxy_http.py [--rounds 5] [--sessions 16] [--calls 200] [--pipelined 5000]

Under pytest, `test_every_row_answers` runs each row once, small, as a test.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from bench_http import Row, _value, process_cpu  # noqa: E402
from mcpframe import core  # noqa: E402
from servers.http_wire_client import Session, open_connection  # noqa: E402

PY = sys.executable
STDIO_SERVER = [PY, __file__, "--serve-stdio"]
HTTP_ROWS = (
    "direct http",
    "direct http lean",
    "listen",
    "listen lean",
    "listen shared lean",
    "listen modern",
    "listen modern lean",
)
PIPE_ROWS = ("direct stdio", "remote", "remote full", "remote httpx")
_URL = re.compile(r"Streamable HTTP on (\S+)")
MCP_PROXY: Path | None = None
"""mcp-proxy's executable (`--mcp-proxy`): its rows run only with it."""
BASELINE: Path | None = None
"""Another mcpframe tree (`--baseline`): the `remote baseline` row runs its proxy."""
TOOLS = {"echo": "echo (def)", "aecho": "aecho (async def)"}
"""The tools an HTTP row can call (`--tools`), as the table names them."""


def _serve_stdio() -> None:
    _bench_server().run()


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT / "python"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "MCPFRAME_BACKEND": core.BACKEND, **extra}


@contextmanager
def _process(
    command: list[str], port: int | None = None, env: dict[str, str] | None = None
) -> Iterator[tuple[str, int]]:
    """A child that prints `Streamable HTTP on URL` on stderr (or, given `port`, listens on it: mcp-proxy);
    yields (URL, pid)."""
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env or _env()
    )
    try:
        assert child.stderr is not None
        threading.Thread(target=_drain, args=(child.stderr, found := []), daemon=True).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and child.poll() is None:
            if port is not None and _listening(port):
                yield f"http://127.0.0.1:{port}/mcp", child.pid
                return
            if port is None and found:
                yield found[0], child.pid
                return
            time.sleep(0.05)
        raise RuntimeError(f"{command} did not start")
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _drain(stream: Any, found: list[str]) -> None:
    """Read a child's stderr to its end (a full pipe would stall it), noting the URL it announces."""
    for line in stream:
        match = _URL.search(line)
        if match and not found:
            found.append(match.group(1))


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _lean(name: str) -> list[str]:
    # Named either way: `serve --http` defaults to uvicorn, `proxy --listen` to the lean server.
    return ["--http-server", "mcpframe" if name.endswith(" lean") else "uvicorn"]


def _direct_http(name: str = "direct http") -> list[str]:
    return [PY, "-m", "mcpframe", "serve", f"{__file__}:_bench_server", "--http", "--port", "0", *_lean(name)]


def _listen(name: str = "listen") -> list[str]:
    url = "http://127.0.0.1:0/mcp"
    if name == "listen lean baseline":  # the other tree's proxy and its children (`_baseline_env`)
        assert BASELINE is not None
        child = [PY, str(BASELINE / "benches" / Path(__file__).name), "--serve-stdio"]
        return [PY, "-m", "mcpframe", "proxy", "--listen", url, *_lean("listen lean"), "--", *child]
    shared = ["--multiplex", "shared"] if " shared" in name else []
    return [PY, "-m", "mcpframe", "proxy", "--listen", url, *_lean(name), *shared, "--", *STDIO_SERVER]


def _baseline_env() -> dict[str, str]:
    """`--baseline`'s tree first on the path (the proxy's children inherit it)."""
    return {**_env(), "PYTHONPATH": str(BASELINE / "python") if BASELINE else ""}


def _bench_server() -> Any:
    """The same server, for `mcpframe serve --http` (a factory: `serve` calls it)."""
    from mcpframe.server import Server  # noqa: PLC0415

    server = Server("bench-proxy", version="1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    def echo(text: str) -> str:
        """Echo the text (the raw HTTP client's tool)."""
        return text

    @server.tool
    async def aecho(text: str) -> str:
        """`echo` as `async def`: answered on the event loop, no worker thread (`stdio_one_instructions`)."""
        return text

    return server


# ---------------------------------------------------------------------------------------------- pipelined


def _frame(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def pipelined(command: list[str], calls: int, env: dict[str, str] | None = None) -> Row:
    """`calls` tools/call written at once to `command`'s stdin (after the handshake), every answer checked.
    A call's latency is the time from the start of the writing to its answer (all are written at once)."""
    child = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env or _env()
    )
    assert child.stdin is not None
    assert child.stdout is not None
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    }
    child.stdin.write(_frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    child.stdin.flush()
    decoder = core.Decoder()
    first = child.stdout.readline()
    assert b'"result"' in first, first
    child.stdin.write(_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    body = b"".join(
        _frame(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": i, "b": 1}},
            }
        )
        for i in range(1, calls + 1)
    )
    latencies: list[float] = []

    def write() -> None:
        assert child.stdin is not None
        for start in range(0, len(body), 1 << 16):
            child.stdin.write(body[start : start + (1 << 16)])
        child.stdin.flush()

    cpu0, start, own0 = process_cpu(child.pid), time.perf_counter(), time.process_time()
    writer = threading.Thread(target=write)
    writer.start()
    got = 0
    fd = child.stdout.fileno()
    while got < calls:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise RuntimeError(f"{command} ended after {got} answers")
        now = time.perf_counter()
        for message in decoder.feed(chunk):
            assert not isinstance(message, core.FrameError), message
            assert message.kind == "result", message
            value = _value(message.result)
            assert value == message.id + 1, message
            latencies.append(now - start)
            got += 1
    seconds = time.perf_counter() - start
    cpu = process_cpu(child.pid) - cpu0
    own = time.process_time() - own0
    writer.join()
    child.stdin.close()
    child.wait(timeout=30)
    row = Row("stdio", "", "pipelined", 1, calls, seconds, latencies)
    row.server_cpu = cpu
    row.cpu = own
    return row


# ---------------------------------------------------------------------------------------------- rows


@dataclasses.dataclass
class Result:
    """One row's rounds."""

    name: str
    tool: str = "add"  # what the child serves the calls with (`TOOLS`; `add` for the pipelined rows)
    rows: list[Row] = dataclasses.field(default_factory=list)
    upstream_cpu: list[float] = dataclasses.field(default_factory=list)  # remote rows: us per call
    child_cpu: list[float] = dataclasses.field(default_factory=list)  # listen rows: its children's, us/call

    def median(self, value: Any) -> float:
        return statistics.median(value(r) for r in self.rows)


def children_cpu(pid: int) -> float:
    """CPU seconds the live child processes of `pid` have used so far (0.0 without any)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            total += sum(process_cpu(int(child)) for child in task.read_text().split())
        except (OSError, ValueError):
            continue
    return total


async def _measure(url: str, pid: int, row: Row, calls: int, tool: str) -> float:
    """Open `row.clients` raw sessions, check an answer on each, then time `calls` calls per session; the
    CPU seconds of `pid`'s children meanwhile."""
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    era = "modern" if row.shape == "modern" else "legacy"
    sessions: list[Session] = []
    try:
        # one by one, each on a fresh connection (a server closes one left idle while the others open;
        # a session whose connection closed meanwhile opens another: its MCP session lives on in its id)
        for i in range(row.clients):
            sessions.append(session := Session(await open_connection(port), port, era, tool))
            await session.open()
            await session.check(10_000_000 + i)  # the output check, before anything is timed

        async def calls_of(session: Session, first: int) -> None:
            for rid in range(first, first + calls):
                start = time.perf_counter()
                await session.call(rid)
                row.latencies.append(time.perf_counter() - start)

        children = children_cpu(pid)
        start, server_cpu, own_cpu = time.perf_counter(), process_cpu(pid), time.process_time()
        await asyncio.gather(*(calls_of(s, i * calls) for i, s in enumerate(sessions)))
        row.seconds = time.perf_counter() - start
        row.server_cpu = process_cpu(pid) - server_cpu
        children = children_cpu(pid) - children
        row.cpu = time.process_time() - own_cpu  # the load generator's: it must stay well below the rest
        row.calls = row.clients * calls
        return children
    finally:
        for session in sessions:
            if session.conn.transport is not None:
                session.conn.transport.close()


def http_round(name: str, sessions: int, calls: int, tool: str = "echo") -> tuple[Row, float]:
    """One HTTP row once: `direct http`, `listen`... or `mcp-proxy listen` (a call in flight per session,
    each calling `tool`); and its children's CPU in us per call."""
    port = None
    if name == "mcp-proxy listen":
        port = _free_port()
        command = [str(MCP_PROXY), "--port", str(port), "--pass-environment", "--log-level", "WARNING"]
        command += ["--", *STDIO_SERVER]
    else:
        command = _direct_http(name) if name.startswith("direct http") else _listen(name)
    shape = "modern" if "modern" in name else "sse"
    env = _baseline_env() if name.endswith(" baseline") else None
    with _process(command, port, env) as (url, pid):
        row = Row("raw", name, shape, sessions, 0, 0.0, [])
        children = asyncio.run(asyncio.wait_for(_measure(url, pid, row, calls, tool), 300))
    return row, 1e6 * children / row.calls


def pipe_round(name: str, calls: int, floor_url: str) -> Row:
    """One pipelined row once: the stdio server alone, or a proxy in front of the (lean) HTTP upstream."""
    if name == "direct stdio":
        return pipelined(STDIO_SERVER, calls)
    if name == "mcp-proxy remote":
        return pipelined([str(MCP_PROXY), floor_url, "--transport", "streamablehttp"], calls)
    env = None
    if name == "remote httpx":
        env = _env(MCPFRAME_HTTP_LEAN="0")
    elif name == "remote full":
        env = _env(MCPFRAME_PROXY_FAST_LANE="0")
    elif name == "remote baseline":
        env = _baseline_env()
    return pipelined([PY, "-m", "mcpframe", "proxy", floor_url], calls, env)


def run(
    rounds: int,
    sessions: int,
    calls: int,
    pipelined_calls: int,
    only: list[str] | None = None,
    *,
    tools: tuple[str, ...] = ("echo", "aecho"),
) -> list[Result]:
    """Every row (or those in `only`), the HTTP ones once per tool of `tools`, `rounds` times, interleaved
    (round 1 of every row, then round 2...)."""
    http_rows = [
        *HTTP_ROWS,
        *(["listen lean baseline"] if BASELINE and (BASELINE / "benches").is_dir() else []),
        *(["mcp-proxy listen"] if MCP_PROXY else []),
    ]
    pipe_rows = [
        *PIPE_ROWS,
        *(["remote baseline"] if BASELINE else []),
        *(["mcp-proxy remote"] if MCP_PROXY else []),
    ]
    if only is not None:
        http_rows = [r for r in http_rows if r in only]
        pipe_rows = [r for r in pipe_rows if r in only]
    http_keys = [(name, tool) for tool in tools for name in http_rows]
    results = {key: Result(key[0], key[1]) for key in http_keys}
    results.update({(name, "add"): Result(name) for name in pipe_rows})
    # the remote rows' one upstream, up for the whole run: mcpframe's lean HTTP server (the fastest here)
    with _process(_direct_http("direct http lean")) as (floor_url, floor_pid):
        for _ in range(rounds):
            for name, tool in http_keys:
                row, children = http_round(name, sessions, calls, tool)
                results[name, tool].rows.append(row)
                results[name, tool].child_cpu.append(children)
            for name in pipe_rows:
                before = process_cpu(floor_pid)
                row = pipe_round(name, pipelined_calls, floor_url)
                results[name, "add"].rows.append(row)
                results[name, "add"].upstream_cpu.append(1e6 * (process_cpu(floor_pid) - before) / row.calls)
    return list(results.values())


def table(results: list[Result]) -> str:
    """Medians side by side."""
    lines = [
        "mcpframe proxy HTTP bridges, tools/call of the tool named (served by mcpframe's `Server`, "
        f"`--serve-stdio`), backend {core.BACKEND}, medians of {len(results[0].rows)} interleaved rounds",
        f"{'row':<20} {'tool':<18} {'load':<22} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'proxy/server CPU us/call':>25} {'load CPU us/call':>17} {'upstream/child CPU us/call':>27}",
    ]
    for result in results:
        first = result.rows[0]
        load = f"{first.clients} sessions x 1" if first.shape != "pipelined" else f"{first.calls} pipelined"
        lines.append(
            f"{result.name:<20} {TOOLS.get(result.tool, result.tool):<18} {load:<22} "
            f"{result.median(lambda r: r.rps):>9.0f} "
            f"{result.median(lambda r: r.percentile(0.5)):>8.2f} "
            f"{result.median(lambda r: r.percentile(0.99)):>8.2f} "
            f"{result.median(lambda r: 1e6 * r.server_cpu / r.calls):>25.0f} "
            f"{result.median(lambda r: 1e6 * r.cpu / r.calls):>17.0f}"
            + (f" {statistics.median(result.upstream_cpu):>27.0f}" if "remote" in result.name else "")
            + (f" {statistics.median(result.child_cpu):>27.0f}" if "listen" in result.name else "")
        )
    return "\n".join(lines)


def test_every_row_answers() -> None:
    """Each row once, small: the processes start, every answer is checked, the table renders."""
    results = run(rounds=1, sessions=2, calls=3, pipelined_calls=20)
    expected = [
        *((name, tool) for tool in ("echo", "aecho") for name in HTTP_ROWS),
        *((n, "add") for n in PIPE_ROWS),
    ]
    assert [(r.name, r.tool) for r in results] == expected
    assert all(r.rows[0].calls > 0 for r in results)
    assert "calls/s" in table(results)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--serve-stdio", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--calls", type=int, default=200, help="calls per session (HTTP rows)")
    parser.add_argument("--pipelined", type=int, default=5000, help="calls pipelined (stdio rows)")
    parser.add_argument("--mcp-proxy", type=Path, default=None, help="mcp-proxy 0.13's executable")
    parser.add_argument("--rows", default=None, help="comma-separated rows to run (default: all)")
    parser.add_argument(
        "--tools", default="echo,aecho", help="the HTTP rows' tools, each a row of its own (echo, aecho)"
    )
    parser.add_argument(
        "--baseline", type=Path, default=None, help="another mcpframe tree: `remote baseline`"
    )
    args = parser.parse_args(argv)
    if args.serve_stdio:
        _serve_stdio()
        return 0
    global MCP_PROXY, BASELINE  # noqa: PLW0603 - one run's settings, read by the rows
    BASELINE = args.baseline
    tools = tuple(args.tools.split(","))
    if not tools or any(tool not in TOOLS for tool in tools):
        parser.error(f"--tools {args.tools!r}: a comma-separated list of {', '.join(TOOLS)}")
    if args.mcp_proxy is not None and not args.mcp_proxy.exists():
        print(f"--mcp-proxy {args.mcp_proxy}: not found, its rows are skipped", file=sys.stderr)
    elif args.mcp_proxy is not None:
        MCP_PROXY = args.mcp_proxy
    only = args.rows.split(",") if args.rows else None
    print(table(run(args.rounds, args.sessions, args.calls, args.pipelined, only, tools=tools)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
