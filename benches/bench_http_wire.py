"""Streamable HTTP at the wire: the floor, `mcpframe serve --http` and the official SDK, side by side.

Four servers, each a child process on 127.0.0.1, answer `tools/call` of an echo tool:

- `floor`: a minimal asyncio HTTP/1.1 keep-alive server (`servers/http_floor.py`, asyncio Protocol +
  orjson), doing the least a JSON-RPC echo over Streamable HTTP needs: find the body, decode it, answer
  `initialize` with a session id, `202` to notifications, the echo's result as JSON or as one SSE event;
- `mcpframe`: `python -m mcpframe serve benches/servers/http_tools.py:server --http` (`--response-mode
  auto` for JSON answers, the default `resumable` for SSE ones);
- `mcpframe-lean`: the same with `--http-server mcpframe` (its own HTTP/1.1 server, `http/wire.py`);
- `sdk`: mcp 2.3.0's `MCPServer.streamable_http_app(json_response=...)` on uvicorn.

The load generator is not any of them: a raw asyncio HTTP/1.1 client (`servers/http_wire_client.py`:
one keep-alive connection per MCP session, one call in flight per session) in this process. Per
configuration and server: `--sessions` sessions share `--calls` calls (calls/s, server CPU µs per call
from /proc/<pid>/stat utime+stime), then one session makes `--latency-calls` calls one at a time (p50 /
p99 µs, server CPU µs per call alone).
Every server's answers are parsed and checked before anything is timed; during timing each answer's
status and echoed text are checked. Rounds are interleaved (every server once per round, the order
rotated) and each figure is the median over rounds: the machine is shared, so expect noise.

Configurations: `--modes json,sse` x `--eras legacy,modern` (2025-11-25 with a session id; 2026-07-28
stateless requests) x `--tools echo,aecho` (`def` and `async def`; also `ayield`, an `async def` that
suspends once as one awaiting I/O does: the floor answers every tool alike). `--slow` adds the
many-sessions case: `--open` sessions opened (initialized, connection kept), `--active` of them calling
the 20 ms `slow` tool.

    python benches/bench_http_wire.py [--rounds 3] [--calls 4000] [--sessions 16]
        [--servers floor,mcpframe,sdk] [--modes json,sse] [--eras legacy,modern]
        [--tools echo,aecho,ayield]
        [--sdk-tools echo] [--slow] [--open 1000] [--active 200] [--baseline ../other-checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from mcpframe import core  # noqa: E402
from servers.http_floor import serve_floor, serve_sdk  # noqa: E402
from servers.http_wire_client import Session, open_connection  # noqa: E402

SERVERS = ("floor", "mcpframe", "mcpframe-lean", "sdk")
MODES = ("json", "sse")
ERAS = ("legacy", "modern")
TOOLS = ("echo", "aecho")
TOOLS_MODULE = ROOT / "benches" / "servers" / "http_tools.py"


# ---------------------------------------------------------------------------------------------- children


def _drain(stream: Any) -> None:
    for _ in stream:  # keep the child's pipe from filling (its later log lines are not needed)
        pass


@contextmanager
def server_process(name: str, mode: str, baseline: str | None = None) -> Iterator[tuple[int, int]]:
    """`name`'s server answering in `mode` in a child process; yields (port, pid).

    A name ending in `@base` is the same mcpframe server run from the `baseline` checkout's `python/`.
    """
    tree = Path(baseline) if name.endswith("@base") and baseline else ROOT
    name = name.removesuffix("@base")
    path = os.pathsep.join(p for p in (str(tree / "python"), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "MCPFRAME_BACKEND": core.BACKEND}
    if name.startswith("mcpframe"):
        response_mode = "auto" if mode == "json" else "resumable"
        command = [
            sys.executable,
            "-m",
            "mcpframe",
            "serve",
            f"{TOOLS_MODULE}:server",
            "--http",
            "--port",
            "0",
        ]
        command += ["--response-mode", response_mode]
        if name == "mcpframe-lean":
            command += ["--http-server", "mcpframe"]
        child = subprocess.Popen(
            command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
        )
        stream = child.stderr
    else:
        command = [sys.executable, __file__, "--serve", name, "--mode", mode]
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        stream = child.stdout
    try:
        assert stream is not None
        port = 0
        for line in stream:
            if "http://" in line:
                port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
                break
        if not port:
            raise RuntimeError(f"the {name} server did not start")
        threading.Thread(target=_drain, args=(stream,), daemon=True).start()
        yield port, child.pid
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------- measuring


@dataclasses.dataclass
class Figures:
    """One server's figures in one configuration and round."""

    calls_per_s: float = 0.0
    cpu_us: float = 0.0  # server CPU per call, many sessions
    alone_cpu_us: float = 0.0  # server CPU per call, one call at a time
    p50_us: float = 0.0
    p99_us: float = 0.0
    timed_out: bool = False


async def _session(port: int, era: str, tool: str) -> Session:
    session = Session(await open_connection(port), port, era, tool)
    await session.open()
    return session


async def _sessions(port: int, era: str, tool: str, count: int) -> list[Session]:
    """`count` open sessions, opened 50 at a time (not one by one: 1,000 of them on the SDK take seconds)."""
    sessions: list[Session] = []
    while len(sessions) < count:
        batch = min(50, count - len(sessions))
        sessions += await asyncio.gather(*(_session(port, era, tool) for _ in range(batch)))
    return sessions


async def _close(sessions: list[Session]) -> None:
    for session in sessions:
        if session.session_id is not None:
            head = session.head.replace(b"POST ", b"DELETE ", 1)
            await (await session._connected()).request(head, b"")
        if session.conn.transport is not None:
            session.conn.transport.close()


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _run_calls(session: Session, rids: range, latencies: list[float] | None) -> None:
    for rid in rids:
        if latencies is None:
            await session.call(rid)
        else:
            start = time.perf_counter()
            await session.call(rid)
            latencies.append(time.perf_counter() - start)


async def measure(port: int, pid: int, era: str, tool: str, args: argparse.Namespace) -> Figures:
    """Throughput with `args.sessions` sessions, then one-at-a-time latency; answers checked first."""
    figures = Figures()
    sessions = await _sessions(port, era, tool, args.sessions)
    try:
        for i, session in enumerate(sessions):
            await session.check(10_000_000 + i)
        per = args.calls // len(sessions)
        start, cpu = time.perf_counter(), process_cpu(pid)
        await asyncio.gather(
            *(_run_calls(s, range(i * per, (i + 1) * per), None) for i, s in enumerate(sessions))
        )
        seconds, used = time.perf_counter() - start, process_cpu(pid) - cpu
        figures.calls_per_s = per * len(sessions) / seconds
        figures.cpu_us = 1e6 * used / (per * len(sessions))
        latencies: list[float] = []
        cpu = process_cpu(pid)
        await _run_calls(sessions[0], range(args.latency_calls), latencies)
        figures.alone_cpu_us = 1e6 * (process_cpu(pid) - cpu) / args.latency_calls
        latencies.sort()
        figures.p50_us, figures.p99_us = 1e6 * _percentile(latencies, 0.5), 1e6 * _percentile(latencies, 0.99)
    finally:
        await _close(sessions)
    return figures


async def measure_slow(port: int, pid: int, args: argparse.Namespace) -> Figures:
    """`args.open` sessions opened, `args.active` of them calling `slow` (20 ms) `args.slow_calls` times."""
    figures = Figures()
    sessions = await _sessions(port, "legacy", "slow", args.open)
    try:
        await sessions[0].check(10_000_000)
        active = sessions[: args.active]
        latencies: list[float] = []
        per = args.slow_calls
        start, cpu = time.perf_counter(), process_cpu(pid)
        await asyncio.gather(
            *(_run_calls(s, range(i * per, (i + 1) * per), latencies) for i, s in enumerate(active))
        )
        seconds, used = time.perf_counter() - start, process_cpu(pid) - cpu
        figures.calls_per_s = len(latencies) / seconds
        figures.cpu_us = 1e6 * used / len(latencies)
        latencies.sort()
        figures.p50_us, figures.p99_us = 1e6 * _percentile(latencies, 0.5), 1e6 * _percentile(latencies, 0.99)
    finally:
        await _close(sessions)
    return figures


def configurations(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(era, tool) pairs to run in each mode, `slow` last."""
    pairs = [(era, tool) for era in args.eras for tool in args.tools]
    return [*pairs, ("legacy", "slow")] if args.slow else pairs


def run(args: argparse.Namespace) -> dict[tuple[str, str, str, str], list[Figures]]:
    """Every mode's servers started once; rounds interleaved: each round runs every configuration on every
    server, the servers' order rotated each round."""
    results: dict[tuple[str, str, str, str], list[Figures]] = {}
    for mode in args.modes:
        with ExitStack() as stack:
            started = {
                name: stack.enter_context(server_process(name, mode, args.baseline)) for name in args.servers
            }
            for round_no in range(args.rounds):
                order = (
                    args.servers[round_no % len(args.servers) :]
                    + args.servers[: round_no % len(args.servers)]
                )
                for era, tool in configurations(args):
                    for name in order:
                        if name == "sdk" and tool not in (*args.sdk_tools, "slow"):
                            continue
                        port, pid = started[name]
                        job = (
                            measure_slow(port, pid, args)
                            if tool == "slow"
                            else measure(port, pid, era, tool, args)
                        )
                        try:
                            figures = asyncio.run(asyncio.wait_for(job, args.max_seconds))
                        except TimeoutError:  # a server that stops answering is a result, not a hang
                            figures = Figures(timed_out=True)
                        results.setdefault((mode, era, tool, name), []).append(figures)
    return results


def table(results: dict[tuple[str, str, str, str], list[Figures]], args: argparse.Namespace) -> str:
    """Medians over rounds, one line per configuration and server, with ratios to the floor."""
    lines = [
        f"Streamable HTTP tools/call on 127.0.0.1; mcpframe core backend: {core.BACKEND}; mcpframe served by "
        f"`mcpframe serve --http`; {args.sessions} sessions x 1 in flight, {args.calls} calls; one-in-flight "
        f"latency over {args.latency_calls} calls; medians of {args.rounds} interleaved rounds",
        f"{'mode':<5} {'era':<7} {'tool':<6} {'server':<18} {'calls/s':>8} {'x floor':>7} "
        f"{'CPU us/call':>11} {'alone':>6} {'p50 us':>7} {'p99 us':>7}",
    ]

    def med(rows: list[Figures], field: str) -> float:
        return float(statistics.median(getattr(r, field) for r in rows))

    for (mode, era, tool, name), all_rows in results.items():
        rows = [r for r in all_rows if not r.timed_out]
        if not rows:
            lines.append(f"{mode:<5} {era:<7} {tool:<6} {name:<18} timed out ({args.max_seconds:.0f} s)")
            continue
        floor = results.get((mode, era, tool, "floor"))
        ratio = med(rows, "calls_per_s") / med(floor, "calls_per_s") if floor else float("nan")
        alone = "" if tool == "slow" else f"{med(rows, 'alone_cpu_us'):.0f}"
        lines.append(
            f"{mode:<5} {era:<7} {tool:<6} {name:<18} {med(rows, 'calls_per_s'):>8.0f} {ratio:>7.2f} "
            f"{med(rows, 'cpu_us'):>11.0f} {alone:>6} {med(rows, 'p50_us'):>7.0f} {med(rows, 'p99_us'):>7.0f}"
        )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--serve", choices=("floor", "sdk"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, default="json", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=4000, help="calls shared by the sessions")
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--latency-calls", type=int, default=1000)
    parser.add_argument("--servers", type=lambda s: s.split(","), default=list(SERVERS))
    parser.add_argument("--modes", type=lambda s: s.split(","), default=list(MODES))
    parser.add_argument("--eras", type=lambda s: s.split(","), default=list(ERAS))
    parser.add_argument("--tools", type=lambda s: s.split(","), default=list(TOOLS))
    parser.add_argument(
        "--sdk-tools", type=lambda s: s.split(","), default=["echo"], help="tools run on the SDK"
    )
    parser.add_argument("--slow", action="store_true", help="add the 20 ms tool with many open sessions")
    parser.add_argument("--open", type=int, default=1000, help="sessions opened for --slow")
    parser.add_argument("--active", type=int, default=200, help="of them calling for --slow")
    parser.add_argument("--slow-calls", type=int, default=10, help="calls per active session for --slow")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="per server and configuration")
    parser.add_argument(
        "--baseline",
        help="another checkout of mcpframe (e.g. a `git worktree` of the last release): its servers run "
        "too, as rows `mcpframe@base` and `mcpframe-lean@base`, for a before/after in one run",
    )
    return parser


def test_wire_bench_answers() -> None:
    """Every server, mode, era and tool, tiny: each answers correctly and the table renders."""
    args = _parser().parse_args(
        ["--rounds", "1", "--calls", "8", "--sessions", "2", "--latency-calls", "4",
         "--sdk-tools", "echo,aecho", "--slow", "--open", "4", "--active", "2", "--slow-calls", "2"]
    )  # fmt: skip
    results = run(args)
    assert len(results) == len(MODES) * (len(ERAS) * len(TOOLS) + 1) * len(SERVERS)
    assert all(rows[0].calls_per_s > 0 and rows[0].p99_us >= rows[0].p50_us > 0 for rows in results.values())
    assert "x floor" in table(results, args)


def main(argv: list[str]) -> int:
    """`--serve NAME` (a child) or the benchmark."""
    args = _parser().parse_args(argv)
    if args.serve == "floor":
        serve_floor(args.mode == "sse")
        return 0
    if args.serve == "sdk":
        serve_sdk(args.mode == "json")
        return 0
    if args.baseline:
        args.servers += [f"{name}@base" for name in args.servers if name.startswith("mcpframe")]
    print(table(run(args), args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
