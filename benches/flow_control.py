"""Flow control over stdio: heavy and non-reading clients, mcpframe's server beside the hand-written floor.

Each contender is a child process on two raw pipes (`servers/mcpframe_flow.py` with the native or the
python core, `servers/floor_echo.py`), with two tools: `echo`, a plain `def` (mcpframe runs it on its
worker pool), and `nap`, an `async def` that answers after 10 ms. The client (`servers/flood.py`) writes
requests as fast as the server's stdin takes them, with no window of its own, so the server's flow control
is what is measured; every answer is checked (its id asked once, its text) and counted as a result, a
refusal (-32603 "Server busy") or another error before any figure is reported.

(a) `--calls` (20,000) pipelined calls of `echo`, then of `nap`, then `--bursts` (20) bursts of 1,000
    `echo` calls (at most 1,000 in flight): requests/s and the server's CPU time per call (all its
    threads, from /proc), side by side with the floor doing the same; then `--sequential` (2,000)
    `echo` calls one at a time (p50/p99 round trip). `--rounds` (3) rounds, the contenders taking turns.
(b) A client that does not read while it offers `--offer` (1,000,000) `echo` calls: it writes until the
    server has gone quiet (stopped reading, or read everything), then reads every answer. The server's
    RSS when the client resumed and its peak (VmHWM) are reported.
(c) `--long` (1,000,000) pipelined `echo` calls on a fresh child: its RSS before and after.

    .venv/bin/python benches/flow_control.py [--quick] [--servers mcpframe-native,mcpframe-python,floor]

`--quick` is a smoke run with small counts (its output says so). The children import the same mcpframe as
this script: `PYTHONPATH=<another checkout>/python` measures that tree (say, before a change) instead.
`bench_flow_control.py` runs a tiny configuration once in the normal test suite and asserts that every
request got its result.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import sys
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if importlib.util.find_spec("mcpframe") is None:
    sys.path.insert(0, str(ROOT.parent / "python"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mcpframe import core  # noqa: E402
from servers.flood import Flood, bursts, flood  # noqa: E402
from servers.stdio_client import ServerKind, running, sequential  # noqa: E402

KINDS = {
    k.key: k
    for k in (
        ServerKind("mcpframe-native", "mcpframe_flow.py", "native"),
        ServerKind("mcpframe-python", "mcpframe_flow.py", "python"),
        ServerKind("floor", "floor_echo.py"),
    )
}
TOOLS = ("echo", "nap")
BURST = "echo x1000"  # (a)'s row of `bursts` 1,000-call bursts: the issue's "1,000 pipelined"
WARM_UP = 1_000
MiB = 1024  # /proc figures are KiB
HELD_RSS_TARGET = 96  # MiB: a non-reading client must not make the server hold more (issue 17)
LONG_GROWTH_TARGET = 16  # MiB: 1M pipelined calls may grow the server's RSS by no more


@dataclasses.dataclass(frozen=True)
class Config:
    """How many requests each measurement sends, and how many interleaved rounds (a) runs."""

    calls: int = 20_000
    bursts: int = 20
    sequential: int = 2_000
    offer: int = 1_000_000
    long: int = 1_000_000
    rounds: int = 3
    quick: bool = False


QUICK = Config(calls=2_000, bursts=5, sequential=300, offer=50_000, long=50_000, rounds=2, quick=True)


@dataclasses.dataclass
class Row:
    """One contender's figures, or why it could not run. (a) keeps every round's floods and latencies."""

    kind: ServerKind
    unavailable: str | None = None
    floods: dict[str, list[Flood]] = dataclasses.field(default_factory=dict)
    latencies: list[list[float]] = dataclasses.field(default_factory=list)
    held: Flood | None = None
    long: Flood | None = None

    def rps(self, tool: str) -> float:
        """The best round's requests/s."""
        return max((f.tally.count / f.seconds for f in self.floods.get(tool, [])), default=0.0)

    def cpu_us(self, tool: str) -> float:
        """The least server CPU per call of any round, in µs."""
        return min((1e6 * f.cpu / f.tally.count for f in self.floods.get(tool, [])), default=0.0)

    def seq_us(self, fraction: float = 0.5) -> float:
        """The `fraction` percentile of the round with the lowest p50, in µs."""
        best = min(self.latencies, key=lambda run: _percentile(run, 0.5), default=[])
        return 1e6 * _percentile(best, fraction)

    def floods_run(self) -> list[Flood]:
        return [f for runs in self.floods.values() for f in runs] + [
            f for f in (self.held, self.long) if f is not None
        ]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def unavailable(kind: ServerKind) -> str | None:
    """Why `kind` cannot run here, or None."""
    if kind.backend == "native":
        try:
            importlib.import_module("mcpframe._core")
        except ImportError as exc:
            return f"mcpframe._core does not import ({exc})"
    return None


def measure_calls(rows: list[Row], config: Config) -> None:
    """(a): every contender's child started at once, then `config.rounds` rounds taking turns, so that
    a change in the machine's load falls on all of them alike."""
    with ExitStack() as stack:
        children = [(row, stack.enter_context(running(row.kind))) for row in rows]
        for _, child in children:
            flood(child, "echo", WARM_UP)
        for _ in range(config.rounds):
            for row, child in children:
                for tool in TOOLS:
                    row.floods.setdefault(tool, []).append(flood(child, tool, config.calls))
                row.floods.setdefault(BURST, []).append(bursts(child, "echo", 1_000, config.bursts))
                row.latencies.append(sequential(child, config.sequential))


def measure_memory(row: Row, config: Config) -> None:
    """(b) and (c), each on a fresh child."""
    with running(row.kind) as child:
        row.held = flood(child, "echo", config.offer, hold=True)
    with running(row.kind) as child:
        flood(child, "echo", WARM_UP)
        row.long = flood(child, "echo", config.long)


def measure(kinds: list[ServerKind], config: Config) -> list[Row]:
    """Every measurement for every contender (a row saying why, for one that cannot run here)."""
    rows = [Row(kind, unavailable(kind)) for kind in kinds]
    live = [row for row in rows if not row.unavailable]
    measure_calls(live, config)
    for row in live:
        measure_memory(row, config)
    return rows


# ---------------------------------------------------------------------------------------------- report


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def _answers(*floods: Flood) -> str:
    """Answered, results, refusals, errors: summed over `floods`."""
    counts = [sum(getattr(f.tally, k) for f in floods) for k in ("done", "results", "refused", "errors")]
    return "{:>9,} {:>9,} {:>8,} {:>7,}".format(*counts)


_ANSWERS = f"{'answered':>9} {'results':>9} {'refused':>8} {'errors':>7}"


def pipelined_lines(rows: list[Row], config: Config, floor: Row | None) -> list[str]:
    lines = [
        f"(a) {config.calls:,} pipelined tools/call per tool, no client window; {config.bursts} bursts of "
        f"1,000 echo calls; {config.sequential:,} echo calls one at a time;",
        f"{config.rounds} rounds, the contenders taking turns",
        "answers: all rounds; req/s: the best round (x floor: its share of the floor's); cpu: the server's",
        "CPU time per call, least of any round (x floor: how many times the floor's); seq: the round with",
        "the lowest p50",
        f"{'server':<16} {'calls':<10} {_ANSWERS} {'req/s':>9} {'x floor':>8} {'cpu us/call':>11} "
        f"{'x floor':>8} {'seq p50/p99 us':>15} {'x floor':>8}",
    ]
    for r in rows:
        for tool, runs in r.floods.items():
            rps, cpu_us = r.rps(tool), r.cpu_us(tool)
            vs_rps = _ratio(rps, floor.rps(tool)) if floor else "-"
            vs_cpu = _ratio(cpu_us, floor.cpu_us(tool)) if floor else "-"
            seq, vs_seq = "", ""
            if tool == "echo":
                seq = f"{r.seq_us():.0f}/{r.seq_us(0.99):.0f}"
                vs_seq = _ratio(r.seq_us(), floor.seq_us()) if floor else "-"
            lines.append(
                f"{r.kind.key:<16} {tool:<10} {_answers(*runs)} {rps:>9,.0f} {vs_rps:>8} {cpu_us:>11.1f} "
                f"{vs_cpu:>8} {seq:>15} {vs_seq:>8}"
            )
    return lines


def memory_lines(rows: list[Row], config: Config) -> list[str]:
    lines = [
        "",
        f"(b) a client that stops reading while it offers {config.offer:,} echo calls, then reads them all",
        f"{'server':<16} {'taken':>9} {'RSS start->held MiB':>20} {'peak MiB':>9} {_ANSWERS}",
    ]
    for r in rows:
        if (f := r.held) is not None:
            m = f.memory
            rss = f"{m.start / MiB:.1f}->{m.held / MiB:.1f}"
            lines.append(
                f"{r.kind.key:<16} {f.written_when_held:>9,} {rss:>20} {m.peak / MiB:>9.1f} {_answers(f)}"
            )
    lines += [
        "taken: requests the server had read when it went quiet (the rest waited in the client)",
        "",
        f"(c) {config.long:,} pipelined echo calls on a fresh child (after {WARM_UP:,} to warm up)",
        f"{'server':<16} {'RSS start->end MiB':>19} {'growth':>7} {'peak MiB':>9} {_ANSWERS} {'req/s':>9}",
    ]
    for r in rows:
        if (f := r.long) is not None:
            m = f.memory
            rss, growth = f"{m.start / MiB:.1f}->{m.end / MiB:.1f}", (m.end - m.start) / MiB
            lines.append(
                f"{r.kind.key:<16} {rss:>19} {growth:>+7.1f} {m.peak / MiB:>9.1f} {_answers(f)} "
                f"{f.tally.count / f.seconds:>9,.0f}"
            )
    return lines


def targets(rows: list[Row], floor: Row | None) -> list[str]:
    """Issue 17's targets, per mcpframe contender."""
    lines = [""]
    for r in rows:
        if r.kind.key == "floor" or r.unavailable:
            continue
        checks = [("every request answered with its result", all(f.tally.clean for f in r.floods_run()), "")]
        if floor and r.rps(BURST) and floor.rps(BURST):
            ratio = r.rps(BURST) / floor.rps(BURST)
            checks.append(("def echo, 1,000 pipelined, >= 0.3x floor", ratio >= 0.3, f"{ratio:.2f}x"))
        if floor and floor.latencies and r.latencies:
            ratio = r.seq_us() / floor.seq_us()
            checks.append(("def echo sequential p50 <= 2x floor", ratio <= 2, f"{ratio:.2f}x"))
        if r.held:
            peak = r.held.memory.peak / MiB
            ok = peak <= HELD_RSS_TARGET
            checks.append((f"peak RSS <= {HELD_RSS_TARGET} MiB (non-reading)", ok, f"{peak:.1f} MiB"))
        if r.long:
            growth = (r.long.memory.end - r.long.memory.start) / MiB
            ok = growth <= LONG_GROWTH_TARGET
            checks.append((f"RSS growth <= {LONG_GROWTH_TARGET} MiB (long run)", ok, f"{growth:+.1f} MiB"))
        lines += [
            f"target {name} ({r.kind.key}): {'met' if ok else 'MISSED'}{f' ({v})' if v else ''}"
            for name, ok, v in checks
        ]
    return lines


def table(rows: list[Row], config: Config) -> str:
    """Every contender side by side, then the targets."""
    floor = next((r for r in rows if r.kind.key == "floor" and not r.unavailable), None)
    header = [
        *(["QUICK: a smoke run with small counts; figures are indicative only"] if config.quick else []),
        f"flow control over stdio; client core {core.BACKEND}, python {sys.version.split()[0]}; each server's"
        " core backend is in its name; every answer checked before any figure",
        *(f"{r.kind.key}: unavailable: {r.unavailable}" for r in rows if r.unavailable),
        "",
    ]
    live = [r for r in rows if not r.unavailable]
    body = pipelined_lines(live, config, floor) + memory_lines(live, config) + targets(live, floor)
    return "\n".join(header + body)


def main(argv: list[str]) -> int:
    """Measure the contenders and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--servers", default=",".join(KINDS), help=f"comma-separated: {','.join(KINDS)}")
    parser.add_argument("--quick", action="store_true", help="smoke run: small counts")
    parser.add_argument("--calls", type=int, help="pipelined calls per tool in (a) (default 20,000)")
    parser.add_argument("--bursts", type=int, help="1,000-call echo bursts per round in (a) (default 20)")
    parser.add_argument("--sequential", type=int, help="one-at-a-time echo calls in (a) (default 2,000)")
    parser.add_argument("--offer", type=int, help="calls the non-reading client offers (default 1,000,000)")
    parser.add_argument("--long", type=int, help="pipelined echo calls in (c) (default 1,000,000)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds of (a) (default 3)")
    args = parser.parse_args(argv)
    keys = [k for k in args.servers.split(",") if k]
    if not set(keys) <= set(KINDS):
        parser.error(f"--servers: choose from {','.join(KINDS)}")
    config = QUICK if args.quick else Config()
    names = ("calls", "bursts", "sequential", "offer", "long", "rounds")
    given = {k: v for k in names if (v := getattr(args, k)) is not None}
    config = dataclasses.replace(config, **given)
    print(f"measuring {', '.join(keys)} ...", file=sys.stderr, flush=True)
    print(table(measure([KINDS[key] for key in keys], config), config))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
