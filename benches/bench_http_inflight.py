"""Server CPU per call with many calls in flight in ONE MCP session (issue 11).

One session (`initialize` on one connection), then N keep-alive connections each POST `tools/call` with
that session's `Mcp-Session-Id`, one request in flight per connection, so N calls are in flight at once
in the one session. Printed: calls/s and the server's CPU µs per call (/proc utime+stime of the server
process) for each N, on the lean server (`--http-server mcpframe`) and on uvicorn, rounds interleaved,
medians. Every answer's status and echoed text are checked.

    PYTHONPATH=python python benches/bench_http_inflight.py [--servers mcpframe-lean,mcpframe]
        [--inflight 1,4,16,64] [--calls 3000] [--rounds 3] [--mode json|sse] [--tool aecho]
        [--baseline /work/main --servers mcpframe-lean@base,mcpframe-lean]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_http_wire import process_cpu, server_process
from servers.http_wire_client import Session, open_connection


def switches(pid: int) -> tuple[int, int]:
    """(threads, context switches so far) of process `pid`, summed over its threads."""
    total, threads = 0, 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        threads += 1
        for line in (task / "status").read_text().splitlines():
            if line.endswith("ctxt_switches:") or "ctxt_switches" in line:
                total += int(line.split()[1])
    return threads, total


async def one_run(
    port: int, pid: int, inflight: int, calls: int, tool: str
) -> tuple[float, float, float, int]:
    """`calls` calls, `inflight` at once, in one session: (calls/s, server CPU µs per call, server
    context switches per call, server threads)."""
    first = Session(await open_connection(port), port, "legacy", tool)
    await first.open()
    await first.check(1)
    sessions = [first]
    for _ in range(inflight - 1):
        other = Session(await open_connection(port), port, "legacy", tool)
        other.head, other.session_id = first.head, first.session_id
        await other.check(2)
        sessions.append(other)
    counter = iter(range(10, 10 + calls))

    async def worker(session: Session) -> None:
        for rid in counter:
            await session.call(rid)

    _, sw0 = switches(pid)
    cpu0, wall0 = process_cpu(pid), time.perf_counter()
    await asyncio.gather(*(worker(s) for s in sessions))
    cpu, wall = process_cpu(pid) - cpu0, time.perf_counter() - wall0
    threads, sw1 = switches(pid)
    for session in sessions:
        assert session.conn.transport is not None
        session.conn.transport.close()
    return calls / wall, cpu / calls * 1e6, (sw1 - sw0) / calls, threads


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--servers", default="mcpframe-lean,mcpframe")
    parser.add_argument("--inflight", default="1,4,16,64")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=("json", "sse"), default="json")
    parser.add_argument("--tool", default="aecho")
    parser.add_argument(
        "--baseline", default=None, help="a checkout whose python/ serves the `NAME@base` servers"
    )
    args = parser.parse_args()
    names = args.servers.split(",")
    levels = [int(n) for n in args.inflight.split(",")]
    results: dict[tuple[str, int], list[tuple[float, float, float, int]]] = {}
    with ExitStack() as stack:
        procs = {name: stack.enter_context(server_process(name, args.mode, args.baseline)) for name in names}
        for _ in range(args.rounds):
            for n in levels:
                for name in names:
                    port, pid = procs[name]
                    figures = asyncio.run(one_run(port, pid, n, args.calls, args.tool))
                    results.setdefault((name, n), []).append(figures)
    print(f"mode={args.mode} tool={args.tool} calls={args.calls} rounds={args.rounds} (medians)")
    head = f"{'server':<20} {'in flight':>9} {'calls/s':>9} {'CPU us/call':>12}"
    print(f"{head} {'switches/call':>14} {'threads':>8}")
    for n in levels:
        for name in names:
            runs = results[(name, n)]
            rate = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            sw = statistics.median(r[2] for r in runs)
            threads = max(r[3] for r in runs)
            print(f"{name:<20} {n:>9} {rate:>9.0f} {cpu:>12.0f} {sw:>14.1f} {threads:>8}")


if __name__ == "__main__":
    main()
