"""What the gateway (`mcpframe proxy --config`) costs: pipelined calls/s, one-call latency and its own CPU.

    PYTHONPATH=<checkout>/python python benches/bench_gateway.py [--calls 5000] [--sequential 500]
        [--window 64] [--rounds 5]

The contenders run the same echo server (`servers/mcpframe_echo.py`, the core backend following
MCPFRAME_BACKEND): directly, behind mcpframe's gateway with a config of two servers (calls go to one of
them, as `one__echo`), and behind FastMCP's `create_proxy` of the same config (`one_echo`; it starts a
backend session per call, so its counts are capped by `--fastmcp-calls`, 0 leaves it out). A raw-pipe
client (every request encoded before the clock starts, answers decoded by mcpframe's core in large reads
and each checked) sends `--calls` pipelined `tools/call` with at most `--window` in flight, then
`--sequential` calls one at a time. The rounds interleave the contenders; the table gives medians over
rounds: calls/s, p50/p99 of one call, the p50 each proxy adds, and the CPU per call of the process the
client talks to (for a gateway: the gateway alone, not the servers it runs), from
/proc/PID/task/*/schedstat (Linux).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "python"))

from mcpframe import core  # noqa: E402
from servers.procs import threads_cpu  # noqa: E402

ECHO = str(ROOT / "servers" / "mcpframe_echo.py")
READ = 1 << 20


class Peer:
    """A child speaking MCP on two raw pipes, after the handshake."""

    def __init__(self, name: str, command: Sequence[str], tool: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT.parent / "python")}
        self.name, self.tool = name, tool
        self.proc = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.wfd, self.rfd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self.decoder = core.Decoder()
        self.next_id = 1
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        }
        self._one("initialize", init)
        os.write(self.wfd, core.encode_notification("notifications/initialized"))

    def _read(self) -> list[Any]:
        while True:
            data = os.read(self.rfd, READ)
            if not data:
                raise RuntimeError(f"{self.name}: the child closed its stdout")
            if out := self.decoder.feed(data):
                return out

    def _one(self, method: str, params: dict[str, Any]) -> Any:
        rid, self.next_id = self.next_id, self.next_id + 1
        os.write(self.wfd, core.encode_request(rid, method, params))
        (answer,) = self._read()
        if answer.kind != "result" or answer.id != rid:
            raise RuntimeError(f"{self.name}: {method} answered {answer!r}")
        return answer.result

    def _frames(self, count: int) -> tuple[int, list[bytes]]:
        first, self.next_id = self.next_id, self.next_id + count
        frames = [
            core.encode_request(i, "tools/call", {"name": self.tool, "arguments": {"text": f"e{i}"}})
            for i in range(first, first + count)
        ]
        return first, frames

    def _check(self, messages: list[Any]) -> int:
        for m in messages:
            if m.kind != "result" or m.result["content"][0]["text"] != f"e{m.id}":
                raise RuntimeError(f"{self.name}: wrong answer {m!r}")
        return len(messages)

    def pipelined(self, count: int, window: int) -> tuple[float, float]:
        """Wall seconds and child CPU seconds for `count` calls, at most `window` in flight."""
        _, frames = self._frames(count)
        done = sent = 0
        out = b""
        cpu, start = threads_cpu(self.proc.pid), time.perf_counter()
        os.set_blocking(self.wfd, False)
        try:
            while done < count:
                if not out and sent < count and sent - done < window:
                    end = min(count, done + window)
                    out, sent = b"".join(frames[sent:end]), end
                readable, writable, _ = select.select([self.rfd], [self.wfd] if out else [], [])
                if writable:
                    with contextlib.suppress(BlockingIOError):
                        out = out[os.write(self.wfd, out) :]
                if readable:
                    data = os.read(self.rfd, READ)
                    if not data:
                        raise RuntimeError(f"{self.name}: the child closed its stdout")
                    done += self._check(self.decoder.feed(data))
        finally:
            os.set_blocking(self.wfd, True)
        return time.perf_counter() - start, threads_cpu(self.proc.pid) - cpu

    def sequential(self, count: int) -> list[float]:
        """Each call's round trip, one at a time."""
        _, frames = self._frames(count)
        latencies = []
        for frame in frames:
            start = time.perf_counter()
            os.write(self.wfd, frame)
            messages = self._read()
            latencies.append(time.perf_counter() - start)
            self._check(messages)
        return latencies

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


FASTMCP = (
    "import json, sys\n"
    "from fastmcp.server import create_proxy\n"
    "create_proxy(json.load(open(sys.argv[1]))).run(show_banner=False)\n"
)
"""FastMCP's gateway: `create_proxy` of the same `mcpServers` config (it names the tool `one_echo`)."""


def _contenders(config: Path, fastmcp: bool) -> list[Peer]:
    gateway = [sys.executable, "-m", "mcpframe", "proxy", "--config", str(config)]
    peers = [Peer("direct", [sys.executable, ECHO], "echo"), Peer("mcpframe gateway", gateway, "one__echo")]
    if fastmcp:
        peers.append(Peer("FastMCP create_proxy", [sys.executable, "-c", FASTMCP, str(config)], "one_echo"))
    return peers


def run(
    calls: int, sequential: int, window: int, rounds: int, config_dir: Path, *, fastmcp_calls: int = 0
) -> list[dict[str, Any]]:
    """The rows of the table (medians over interleaved rounds); FastMCP's only with `fastmcp_calls` (its
    counts are capped to that: it is slow)."""
    config = config_dir / "servers.json"
    server = {"command": sys.executable, "args": [ECHO]}
    config.write_text(json.dumps({"mcpServers": {"one": server, "two": server}}))
    peers = _contenders(config, fastmcp_calls > 0)
    counts = {p.name: (calls, sequential) for p in peers}
    counts["FastMCP create_proxy"] = (min(calls, fastmcp_calls), min(sequential, max(1, fastmcp_calls // 10)))
    results: dict[str, list[tuple[float, float, float, float]]] = {p.name: [] for p in peers}
    try:
        for peer in peers:  # warm-up
            peer.pipelined(min(counts[peer.name][0], 200), window)
        for _ in range(rounds):
            for peer in peers:
                many, one_by_one = counts[peer.name]
                seconds, cpu = peer.pipelined(many, window)
                latencies = peer.sequential(one_by_one)
                p50, p99 = _percentile(latencies, 0.5), _percentile(latencies, 0.99)
                results[peer.name].append((many / seconds, cpu / many, p50, p99))
    finally:
        for peer in peers:
            peer.close()
    rows = []
    for name, samples in results.items():
        rate, cpu, p50, p99 = (statistics.median(column) for column in zip(*samples, strict=True))
        row = {"name": name, "calls_per_s": rate, "cpu_us_per_call": cpu * 1e6, "p50_us": p50 * 1e6}
        row["p99_us"] = p99 * 1e6
        rows.append(row)
    for row in rows[1:]:
        row["added_p50_us"] = row["p50_us"] - rows[0]["p50_us"]
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| contender | calls/s | CPU µs/call (that process) | p50 µs | p99 µs | added p50 µs |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        added = f"{row['added_p50_us']:.0f}" if "added_p50_us" in row else "-"
        lines.append(
            f"| {row['name']} | {row['calls_per_s']:,.0f} | {row['cpu_us_per_call']:.0f} | "
            f"{row['p50_us']:.0f} | {row['p99_us']:.0f} | {added} |"
        )
    return "\n".join(lines)


def test_gateway_bench_smoke(tmp_path: Path) -> None:
    """Tiny counts: every answer checked, both rows there (the figures mean nothing at this size)."""
    rows = run(calls=50, sequential=5, window=8, rounds=1, config_dir=tmp_path)
    assert [row["name"] for row in rows] == ["direct", "mcpframe gateway"]
    assert all(row["calls_per_s"] > 0 for row in rows)
    assert "| mcpframe gateway |" in table(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--sequential", type=int, default=500)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--fastmcp-calls", type=int, default=50, help="FastMCP's pipelined calls per round (0: leave it out)"
    )
    args = parser.parse_args(argv)
    fastmcp = args.fastmcp_calls if importlib.util.find_spec("fastmcp") is not None else 0
    if args.fastmcp_calls and not fastmcp:
        print("FastMCP create_proxy: unavailable (fastmcp is not installed)")
    with tempfile.TemporaryDirectory() as scratch:
        rows = run(
            args.calls, args.sequential, args.window, args.rounds, Path(scratch), fastmcp_calls=fastmcp
        )
    backend = os.environ.get("MCPFRAME_BACKEND", "auto")
    print(
        f"MCPFRAME_BACKEND={backend}, {args.calls} pipelined calls (window {args.window}), "
        f"{args.sequential} sequential, medians of {args.rounds} interleaved rounds"
    )
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
