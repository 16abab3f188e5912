"""The worker-thread hop of a `def` tool: a stdio server child's CPU and context switches per call.

    python benches/bench_def_hop.py [--calls 2000] [--rounds 3] [--inflight 1,16] [--tools echo,aecho]
        [--baseline DIR] [--batch]

The child is `bench_proxy_http.py --serve-stdio` (mcpframe's `Server` with `echo`, a `def` tool whose call
goes to a worker thread and back, and `aecho`, the same as `async def`, answered on the event loop). A raw
pipe client keeps `--inflight` calls in flight (1: the next request is written once the answer is read, as
the proxy drives a child under one HTTP session; 16: a new request for each answer read); every answer is
checked, warm-up calls (`WARM_UP`) included, before the measured ones. Per call over the measured calls:
the child's CPU time (the sum of its threads' `/proc/PID/task/*/schedstat` run time, nanoseconds: the
kernel's part and the worker threads included), and its threads' voluntary and involuntary context switches
(`/proc/PID/task/*/status`), the event loop's thread (`loop`) and the others (`workers`) apart, its threads'
moves between CPUs (`migr`, from `/proc/PID/task/*/sched` where the kernel has it) and the most threads
the child had at the end of a round (the loop's and the pool's).

`--baseline DIR` runs DIR's child too (`DIR/benches/bench_proxy_http.py` on `DIR/python`), interleaved
with this tree's round by round (in turn first and last); medians of `--rounds`. `--batch`: this tree once
more with `MCPFRAME_WORKER_BATCH=1` (its worker threads under `SCHED_BATCH`, `mcpframe._threads`), row
`batch`. The backend is `MCPFRAME_BACKEND`'s (the children inherit the environment). CPU time on a loaded
box moves with the load (caches, migrations: ±20 % between two runs of the same tree at load 4-5); compare
trees within one run, over several rounds, and count context switches, which the load moves less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))
sys.path.insert(0, str(ROOT / "python"))

from mcpframe import core  # noqa: E402
from servers.callgrind import WARM_UP  # noqa: E402
from stdio_one_instructions import Pipes  # noqa: E402


@dataclass
class Sample:
    """One child's counters at one moment: CPU nanoseconds and context switches (all threads)."""

    cpu_ns: int = 0
    loop_vol: int = 0
    loop_invol: int = 0
    work_vol: int = 0
    work_invol: int = 0
    migrations: int = 0
    threads: int = 0

    def minus(self, other: Sample) -> Sample:
        """The counts from `other` to this one (the thread count is this one's)."""
        deltas = [a - b for a, b in zip(self.astuple()[:-1], other.astuple()[:-1], strict=True)]
        return Sample(*deltas, threads=self.threads)

    def astuple(self) -> tuple[int, ...]:
        return (
            self.cpu_ns,
            self.loop_vol,
            self.loop_invol,
            self.work_vol,
            self.work_invol,
            self.migrations,
            self.threads,
        )


def sample(pid: int) -> Sample:
    """Process `pid`'s counters now (threads that end meanwhile are skipped: the server's workers stay)."""
    out = Sample()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            run_ns = int((task / "schedstat").read_text().split()[0])
            lines = (task / "status").read_text().splitlines()
        except OSError:
            continue
        try:  # where the kernel has it (SCHED_DEBUG)
            sched = (task / "sched").read_text().splitlines()
        except OSError:
            sched = []
        switches = {k: int(v) for k, _, v in (line.partition(":") for line in lines) if "ctxt_switches" in k}
        vol, invol = switches["voluntary_ctxt_switches"], switches["nonvoluntary_ctxt_switches"]
        out.cpu_ns += run_ns
        out.migrations += sum(
            int(line.split(":")[1]) for line in sched if line.startswith("se.nr_migrations")
        )
        out.threads += 1
        if task.name == str(pid):
            out.loop_vol += vol
            out.loop_invol += invol
        else:
            out.work_vol += vol
            out.work_invol += invol
    return out


class Client(Pipes):
    """The child's pipes (`stdio_one_instructions.Pipes`), with calls kept `inflight` at a time."""

    def _request(self, rid: int) -> bytes:
        params = {"name": self.tool, "arguments": {"text": f"t{rid}"}}
        return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}) + b"\n"

    def calls(self, first: int, count: int, inflight: int) -> None:
        """Calls `first` .. `first + count - 1`, `inflight` at a time; each answer checked."""
        pending: set[int] = set()
        nxt, end = first, first + count
        while nxt < end or pending:
            burst = b""
            while nxt < end and len(pending) < inflight:
                burst += self._request(nxt)
                pending.add(nxt)
                nxt += 1
            if burst:
                os.write(self.write_fd, burst)
            answer = self.line()
            rid = answer.get("id")
            if rid not in pending:
                raise AssertionError(f"unexpected answer {answer!r}")
            pending.discard(rid)  # type: ignore[arg-type]
            if answer.get("result") != {"content": [{"type": "text", "text": f"t{rid}"}]}:
                raise AssertionError(f"{self.tool}(t{rid}) answered {answer!r}")


def measure(tree: Path, extra: dict[str, str], tool: str, inflight: int, calls: int) -> Sample:
    """A fresh child of `tree` (`extra` added to its environment): opened, warmed up, then `calls` calls
    measured (see the module doc)."""
    cmd = [sys.executable, str(tree / "benches" / "bench_proxy_http.py"), "--serve-stdio"]
    env = {**os.environ, "PYTHONPATH": str(tree / "python"), "PYTHONHASHSEED": "0", **extra}
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        client = Client(child, tool)
        client.open()
        client.calls(0, WARM_UP, inflight)
        before = sample(child.pid)
        client.calls(WARM_UP, calls, inflight)
        return sample(child.pid).minus(before)
    finally:
        assert child.stdin is not None
        child.stdin.close()  # a stdio server's cue to exit
        child.wait(timeout=60)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--inflight", default="1,16", help="comma-separated calls kept in flight")
    parser.add_argument("--tools", default="echo,aecho", help="echo (def), aecho (async def)")
    parser.add_argument("--baseline", help="another checkout (its python/ and benches/), run side by side")
    parser.add_argument("--batch", action="store_true", help="this tree with MCPFRAME_WORKER_BATCH=1 too")
    args = parser.parse_args(argv)
    off = {"MCPFRAME_WORKER_BATCH": "0"}
    trees = [("this", ROOT, off)]
    if args.batch:
        trees.append(("batch", ROOT, {"MCPFRAME_WORKER_BATCH": "1"}))
    if args.baseline:
        trees.append(("baseline", Path(args.baseline).resolve(), off))
    shapes = [(tool, int(n)) for tool in args.tools.split(",") for n in args.inflight.split(",")]
    results: dict[tuple[str, str, int], list[Sample]] = {}
    for round_no in range(args.rounds):
        for tool, inflight in shapes:
            for name, tree, extra in trees if round_no % 2 == 0 else trees[::-1]:  # no tree always first
                sampled = measure(tree, extra, tool, inflight, args.calls)
                results.setdefault((name, tool, inflight), []).append(sampled)
    load = os.getloadavg()
    print(
        f"def hop: stdio child, backend {core.BACKEND}, {args.calls} calls after {WARM_UP} warm-up, "
        f"medians of {args.rounds} interleaved rounds, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(
        f"{'tree':<9} {'tool':<6} {'inflight':>8} {'CPU us/call':>12} {'loop vol':>9} {'loop invol':>11} "
        f"{'work vol':>9} {'work invol':>11} {'switches':>9} {'migr':>6} {'threads':>8}"
    )
    for tool, inflight in shapes:
        for name, _, _ in trees:
            rows = results[(name, tool, inflight)]

            def med(pick: int, rows: list[Sample] = rows) -> float:
                return statistics.median(row.astuple()[pick] for row in rows) / args.calls

            total = statistics.median(sum(row.astuple()[1:5]) for row in rows) / args.calls
            migrations = med(5)
            threads = max(row.threads for row in rows)
            print(
                f"{name:<9} {tool:<6} {inflight:>8} {med(0) / 1000:>12.1f} {med(1):>9.2f} {med(2):>11.2f} "
                f"{med(3):>9.2f} {med(4):>11.2f} {total:>9.2f} {migrations:>6.2f} {threads:>8}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
