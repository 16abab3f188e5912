"""Scale-out (issue 15): Streamable HTTP sessions on the in-process store vs Redis on 1, 2 and 3 instances.

    python benches/bench_scale.py [--rounds 3] [--calls 3000] [--sessions 16] [--modes json,sse]
        [--configs memory1,redis1,redis2,redis3]

Side by side in one run: `mcpframe serve benches/servers/http_tools.py:server --http` with the default
in-process store on one instance (`memory1`), and with `--store redis://...` on one, two and three instances
(`redisN`) sharing one `redis-server` started here on a free loopback port. The load is a raw asyncio
HTTP/1.1 client (`servers/http_wire_client.py`): `--sessions` 2025-11-25 sessions with one `tools/call`
(`aecho`) in flight each share `--calls` calls; each session keeps one keep-alive connection per instance
and sends each call to the next instance (round robin, no stickiness), so every call of a Redis
configuration may be served by an instance that did not serve the previous one. Reported: calls/s,
p50/p99 latency, and CPU per call of the instances plus redis-server, and redis-server's part of it
(`/proc/<pid>/stat`, 10 ms ticks).
`--modes`: `json` (`--response-mode auto`: one Redis round trip per call, `GETEX` of the session's state)
and `sse` (the default `resumable` mode: the answer is an SSE stream stored in Redis too, the priming
event with the response in one pipeline, then the end marker). Rounds are interleaved (the order of the
configurations rotated) and figures are medians over rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from mcpframe import core  # noqa: E402
from servers.http_wire_client import LEGACY_VERSION, Connection, answer_of, open_connection  # noqa: E402
from servers.procs import process_cpu, redis_server  # noqa: E402

TOOLS_MODULE = ROOT / "benches" / "servers" / "http_tools.py"
CONFIGS = ("memory1", "redis1", "redis2", "redis3")
MODES = ("json", "sse")


# ---------------------------------------------------------------------------------------------- children


def _drain(stream: Any) -> None:
    for _ in stream:  # keep the child's pipe from filling
        pass


@contextmanager
def instance(mode: str, store: str | None) -> Iterator[tuple[int, int]]:
    """`mcpframe serve --http` answering in `mode`, with `--store` if given; yields (port, pid)."""
    path = os.pathsep.join(p for p in (str(ROOT / "python"), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "MCPFRAME_BACKEND": core.BACKEND}
    command = [sys.executable, "-m", "mcpframe", "serve", f"{TOOLS_MODULE}:server", "--http", "--port", "0"]
    command += ["--response-mode", "auto" if mode == "json" else "resumable"]
    if store is not None:
        command += ["--store", store]
    child = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    try:
        assert child.stderr is not None
        port = 0
        for line in child.stderr:
            if "Streamable HTTP on http://" in line:
                port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
                break
        if not port:
            raise RuntimeError("mcpframe serve did not start")
        threading.Thread(target=_drain, args=(child.stderr,), daemon=True).start()
        yield port, child.pid
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# ---------------------------------------------------------------------------------------------- the load


class RoundRobinSession:
    """One 2025-11-25 session with a connection to every instance; each request goes to the next one."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.conns: list[Connection] = []
        self.turn = itertools.count()
        self.head: list[bytes] = []

    def _base(self, port: int) -> bytes:
        return (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n" % port
        )

    async def open(self) -> None:
        """Connect to every instance; initialize on the first, `initialized` on the next."""
        self.conns = [await open_connection(port) for port in self.ports]
        params = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        }
        body = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        status, headers, answer = await self.conns[0].request(self._base(self.ports[0]), body)
        if status != 200 or "result" not in answer_of(headers, answer, 0):
            raise AssertionError(f"initialize answered {status} {answer!r}")
        extra = b"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n" % (
            headers["mcp-session-id"].encode(),
            LEGACY_VERSION.encode(),
        )
        self.head = [self._base(port) + extra for port in self.ports]
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        status, _, answer = await self._send(note)
        if status != 202:
            raise AssertionError(f"notifications/initialized answered {status} {answer!r}")

    async def _send(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        n = next(self.turn) % len(self.ports)
        conn = self.conns[n]
        if conn.lost is not None:  # an idle keep-alive connection the server closed: the session lives on
            conn = self.conns[n] = await open_connection(self.ports[n])
        return await conn.request(self.head[n], body)

    async def call(self, rid: int, *, check: bool = False) -> None:
        """One `aecho` call; its status and echoed text are checked (in full with `check`)."""
        params = {"name": "aecho", "arguments": {"text": f"t{rid}"}}
        body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
        status, headers, answer = await self._send(body)
        if check:
            content = answer_of(headers, answer, rid).get("result", {}).get("content")
            if status != 200 or content != [{"type": "text", "text": f"t{rid}"}]:
                raise AssertionError(f"aecho(t{rid}) answered {status} {answer!r}")
        elif status != 200 or b'"t%d"' % rid not in answer:
            raise AssertionError(f"aecho(t{rid}) answered {status} {answer!r}")


async def load(ports: list[int], sessions: int, calls: int) -> tuple[float, list[float]]:
    """`calls` calls over `sessions` round-robin sessions, one in flight each: (seconds, latencies)."""
    opened = [RoundRobinSession(ports) for _ in range(sessions)]
    for session in opened:
        await session.open()
        for rid in range(1, len(ports) + 1):  # every instance answers in full first (and builds the session)
            await session.call(rid, check=True)
    latencies: list[float] = []
    per = max(1, calls // sessions)

    async def run(session: RoundRobinSession) -> None:
        for rid in range(100, 100 + per):
            start = time.perf_counter()
            await session.call(rid)
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(run(s) for s in opened))
    took = time.perf_counter() - start
    for session in opened:
        for conn in session.conns:
            if conn.transport is not None:
                conn.transport.close()
    return took, latencies


# ---------------------------------------------------------------------------------------------- the run


def run(args: argparse.Namespace) -> dict[tuple[str, str], dict[str, float]]:
    """Every configuration and mode, interleaved rounds; the median figures of each."""
    configs = [c for c in args.configs.split(",") if c]
    modes = [m for m in args.modes.split(",") if m]
    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    with ExitStack() as stack:
        url, redis_pid = stack.enter_context(redis_server())
        started: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for mode in modes:
            for config in configs:
                count = int(config[-1])
                store = None if config.startswith("memory") else url
                started[config, mode] = [stack.enter_context(instance(mode, store)) for _ in range(count)]
        for round_no in range(args.rounds):
            keys = list(started)
            shift = round_no % len(keys)
            for key in keys[shift:] + keys[:shift]:
                pids = [pid for _, pid in started[key]] + ([redis_pid] if key[0].startswith("redis") else [])
                cpu0 = sum(process_cpu(pid) for pid in pids)
                redis0 = process_cpu(redis_pid)
                took, latencies = asyncio.run(load([p for p, _ in started[key]], args.sessions, args.calls))
                cpu = sum(process_cpu(pid) for pid in pids) - cpu0
                redis_cpu = process_cpu(redis_pid) - redis0 if key[0].startswith("redis") else 0.0
                latencies.sort()
                n = len(latencies)
                samples.setdefault(key, []).append(
                    {
                        "calls_per_s": n / took,
                        "p50_us": latencies[n // 2] * 1e6,
                        "p99_us": latencies[min(n - 1, int(n * 0.99))] * 1e6,
                        "cpu_us": cpu / n * 1e6,
                        "redis_us": redis_cpu / n * 1e6,
                    }
                )
    return {key: {f: statistics.median(s[f] for s in rows) for f in rows[0]} for key, rows in samples.items()}


def table(results: dict[tuple[str, str], dict[str, float]]) -> str:
    """A markdown table, the in-process store on one instance as the reference of each mode."""
    lines = [
        "| answers | configuration | calls/s | x memory1 | p50 / p99 us | CPU us/call "
        "| of which redis-server |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (config, mode), row in results.items():
        ref = results.get(("memory1", mode), row)["calls_per_s"]
        lines.append(
            f"| {mode} | {config} | {row['calls_per_s']:,.0f} | {row['calls_per_s'] / ref:.2f} | "
            f"{row['p50_us']:,.0f} / {row['p99_us']:,.0f} | {row['cpu_us']:,.0f} | {row['redis_us']:,.0f} |"
        )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3000, help="calls per configuration and round")
    parser.add_argument("--sessions", type=int, default=16, help="sessions, one call in flight each")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--modes", default=",".join(MODES))
    return parser


def test_scale_bench_answers() -> None:
    """Tiny: the in-process store and Redis on two instances answer every call, and the table renders."""
    if shutil.which("redis-server") is None and os.environ.get("CI") != "true":
        import pytest  # noqa: PLC0415 - only under pytest

        pytest.skip("redis-server is not installed (scripts/install-redis.sh)")
    flags = ["--rounds", "1", "--calls", "8", "--sessions", "2", "--configs", "memory1,redis2"]
    results = run(_parser().parse_args([*flags, "--modes", "sse"]))
    assert set(results) == {("memory1", "sse"), ("redis2", "sse")}
    assert all(r["calls_per_s"] > 0 and r["p99_us"] >= r["p50_us"] > 0 for r in results.values())
    assert "| sse | redis2 |" in table(results)


def main(argv: list[str]) -> int:
    """Run the benchmark and print the table."""
    args = _parser().parse_args(argv)
    print(f"backend {core.BACKEND}, {args.rounds} rounds, {args.calls} calls, {args.sessions} sessions")
    print(table(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
