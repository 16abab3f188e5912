"""Server CPU per request of one stack, with the start-up heap frozen out of the cyclic GC and without.

``python benches/engine_cpu.py [--mode engine|mcpframe] [--tool echo|add] [--bursts 30] [--rounds 2]``

Spawns ``tests/compat/engine_apps.py MODE`` (the engine drop-in or mcpframe's own Server) twice per round,
once with ``MCPFRAME_GC_FREEZE=1`` and once with ``=0`` (interleaved, so both see the same machine load),
sends ``--bursts`` pipelined bursts of 1,000 ``tools/call`` (every answer checked, as in ``bench_engine``)
and prints, per setting, the server's CPU time per request (user + system of all its threads, from
``/proc``: steadier than wall time on a shared machine), the best burst's requests/s and the mean wall time
per request. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from bench_compat import RawClient, spawned
from bench_engine import APPS, CALLS
from mcpframe import core
from servers.procs import process_cpu as cpu_seconds

BURST = 1000
SETTINGS = {"frozen": "1", "not frozen": "0"}


@contextmanager
def gc_freeze(value: str) -> Iterator[None]:
    """``MCPFRAME_GC_FREEZE=value`` for the children spawned inside."""
    before = os.environ.get("MCPFRAME_GC_FREEZE")
    os.environ["MCPFRAME_GC_FREEZE"] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ["MCPFRAME_GC_FREEZE"]
        else:
            os.environ["MCPFRAME_GC_FREEZE"] = before


async def measure(mode: str, tool: str, bursts: int) -> tuple[float, float, float]:
    """(server CPU µs per request, best burst's requests/s, mean wall µs per request) of one child."""
    command = [sys.executable, str(APPS), mode]
    async with spawned(command, lambda process: RawClient(process, *CALLS[tool])) as client:
        await client.pipelined(5)  # checked before timing
        cpu_before, wall_before, best = cpu_seconds(client.process.pid), time.perf_counter(), float("inf")
        for _ in range(bursts):
            start = time.perf_counter()
            await client.pipelined(BURST)
            best = min(best, time.perf_counter() - start)
        requests = bursts * BURST
        cpu = (cpu_seconds(client.process.pid) - cpu_before) / requests * 1e6
        wall = (time.perf_counter() - wall_before) / requests * 1e6
    return cpu, BURST / best, wall


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["engine", "mcpframe"], default="engine")
    parser.add_argument("--tool", choices=sorted(CALLS), default="echo")
    parser.add_argument("--bursts", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(
        f"{args.mode} stack, tool {args.tool}, core backend {core.BACKEND}, {args.bursts} x {BURST} pipelined"
    )
    rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name in SETTINGS}
    for _ in range(args.rounds):
        for name, value in SETTINGS.items():
            with gc_freeze(value):
                rows[name].append(await measure(args.mode, args.tool, args.bursts))
    for name, runs in rows.items():
        cpu = ", ".join(f"{run[0]:.1f}" for run in runs)
        rate = ", ".join(f"{run[1]:,.0f}" for run in runs)
        wall = ", ".join(f"{run[2]:.1f}" for run in runs)
        print(f"{name:>11}: server CPU µs/req {cpu} | best req/s {rate} | mean wall µs/req {wall}")


if __name__ == "__main__":
    anyio.run(main)
