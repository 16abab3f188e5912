"""The worker-thread hop of a `def` tool: a stdio server child's CPU and context switches per call.

    python benches/bench_def_hop.py [--calls 2000] [--rounds 3] [--inflight 1,16] [--tools echo,aecho]
        [--baseline DIR] [--also VAR=VALUE ...] [--pin] [--block 200]

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

`--baseline DIR` runs DIR's child too (`DIR/benches/bench_proxy_http.py` on `DIR/python`) beside this
tree's: every child of a round is started and warmed up, then they take turns, `--block` calls each, so
a change of load on the machine falls on them alike (a tree in turn first and last); medians of
`--rounds`. `--also VAR=VALUE`: this tree once more with that variable in its environment (a row of
its own; repeatable). `--pin`: this process on CPU 0 and every child (all
its threads) on CPU 1: where the client and the child's threads land moves a child's CPU per call by
up to 2x from run to run (an unpinned A/A run of one tree against a copy read 75.1 against 35.7 µs
per call); pinned, the trees agree within a few percent (79.0 / 79.4 µs one at a time, 17.3 / 17.2
with 16 in flight). The backend is `MCPFRAME_BACKEND`'s (the children inherit the environment).
Compare trees within one run, and count context switches, which the load moves less.
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

    def add(self, other: Sample) -> None:
        """Add `other`'s counts to these (the thread count becomes `other`'s)."""
        self.cpu_ns += other.cpu_ns
        self.loop_vol += other.loop_vol
        self.loop_invol += other.loop_invol
        self.work_vol += other.work_vol
        self.work_invol += other.work_invol
        self.migrations += other.migrations
        self.threads = other.threads

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


def _child(tree: Path, extra: dict[str, str], cpu: int | None) -> subprocess.Popen[bytes]:
    pin = [] if cpu is None else ["taskset", "-c", str(cpu)]
    cmd = [*pin, sys.executable, str(tree / "benches" / "bench_proxy_http.py"), "--serve-stdio"]
    env = {**os.environ, "PYTHONPATH": str(tree / "python"), "PYTHONHASHSEED": "0", **extra}
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def measure(
    trees: list[tuple[str, Path, dict[str, str]]],
    *,
    tool: str,
    inflight: int,
    calls: int,
    block: int,
    cpu: int | None = None,
) -> dict[str, Sample]:
    """A fresh child of each tree (`extra` added to its environment), all opened and warmed up, then
    `calls` calls each measured in blocks of `block`, the children taking turns block by block (so a
    change of load touches them alike): each child's counters summed over its own blocks."""
    children = [_child(tree, extra, cpu) for _, tree, extra in trees]
    try:
        clients = [Client(child, tool) for child in children]
        for client in clients:
            client.open()
            client.calls(0, WARM_UP, inflight)
        sums = [Sample() for _ in clients]
        for first in range(WARM_UP, WARM_UP + calls, block):
            count = min(block, WARM_UP + calls - first)
            for child, client, total in zip(children, clients, sums, strict=True):
                before = sample(child.pid)
                client.calls(first, count, inflight)
                total.add(sample(child.pid).minus(before))
        return {name: total for (name, _, _), total in zip(trees, sums, strict=True)}
    finally:
        for child in children:
            assert child.stdin is not None
            child.stdin.close()  # a stdio server's cue to exit
        for child in children:
            child.wait(timeout=60)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block", type=int, default=200, help="calls per turn of each child")
    parser.add_argument("--pin", action="store_true", help="this client on CPU 0, every child on CPU 1")
    parser.add_argument("--inflight", default="1,16", help="comma-separated calls kept in flight")
    parser.add_argument("--tools", default="echo,aecho", help="echo (def), aecho (async def)")
    parser.add_argument("--baseline", help="another checkout (its python/ and benches/), run side by side")
    parser.add_argument("--also", action="append", default=[], help="VAR=VALUE: this tree with it too")
    args = parser.parse_args(argv)
    trees: list[tuple[str, Path, dict[str, str]]] = [("this", ROOT, {})]
    for assignment in args.also:
        var, _, value = assignment.partition("=")
        trees.append((assignment, ROOT, {var: value}))
    if args.baseline:
        trees.append(("baseline", Path(args.baseline).resolve(), {}))
    width = max(9, *(len(name) + 1 for name, _, _ in trees))
    shapes = [(tool, int(n)) for tool in args.tools.split(",") for n in args.inflight.split(",")]
    results: dict[tuple[str, str, int], list[Sample]] = {}
    cpu = None
    if args.pin:
        os.sched_setaffinity(0, {0})
        cpu = 1
    for round_no in range(args.rounds):
        for tool, inflight in shapes:
            order = trees if round_no % 2 == 0 else trees[::-1]  # no tree always first
            for name, sampled in measure(
                order, tool=tool, inflight=inflight, calls=args.calls, block=args.block, cpu=cpu
            ).items():
                results.setdefault((name, tool, inflight), []).append(sampled)
    load = os.getloadavg()
    print(
        f"def hop: stdio child, backend {core.BACKEND}, {args.calls} calls after {WARM_UP} warm-up, "
        f"blocks of {args.block} in turn, medians of {args.rounds} rounds, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(
        f"{'tree':<{width}} {'tool':<6} {'inflight':>8} {'CPU us/call':>12} {'loop vol':>9} "
        f"{'loop invol':>11} {'work vol':>9} {'work invol':>11} {'switches':>9} {'migr':>6} {'threads':>8}"
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
                f"{name:<{width}} {tool:<6} {inflight:>8} {med(0) / 1000:>12.1f} {med(1):>9.2f} "
                f"{med(2):>11.2f} {med(3):>9.2f} {med(4):>11.2f} {total:>9.2f} {migrations:>6.2f} "
                f"{threads:>8}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
