"""Plain-text tables and the JSON document of a benchmark run."""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

from mcpframe import __version__
from mcpframe.bench.contenders import backend_status
from mcpframe.bench.runner import MIB, FrameRow, Results, Row, Target

__all__ = ["busy_note", "environment", "method", "render", "summary", "to_json"]

SCHEMA = 1


def environment() -> dict[str, Any]:
    """Versions, machine and backend availability, for the header and the JSON."""
    return {
        "mcpframe": __version__,
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": f"{platform.system()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "backends": backend_status(),
    }


def _load() -> float | None:
    """The 1-minute load average now (at the end of the run: it covers the run's last minute); None where
    the platform has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def busy_note(clock: str, cpus: int | None, load: float | None) -> str | None:
    """A line for a wall-clock run on a machine with more runnable work than cores: its figures can be off
    several times over (others' work counted as ours), which the report should say rather than a reader
    find out by comparing with the README; None otherwise."""
    if clock != "wall" or load is None or not cpus or load <= cpus:
        return None
    return (
        f"note: load average {load:.1f} on {cpus} CPUs during the run: other work shared the cores, so these "
        "wall-clock figures are noisy; --clock cpu counts this process's CPU time only"
    )


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _why(status: str, reason: str | None) -> str:
    if status == "unavailable" and reason and len(reason) > 60:
        return f"{status}: {reason[:57]}..."
    return f"{status}: {reason}"


def _row_line(row: Row) -> str:
    if row.status != "ok":
        return f"  {row.label:<38} {_why(row.status, row.reason)}"
    ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
    return (
        f"  {row.label:<38} {_num(row.msgs_per_s):>12} {_num(row.mb_per_s):>9} "
        f"{_num(row.us_per_msg):>9} {ratio:>9}"
    )


def _rows_text(results: Results) -> list[str]:
    lines: list[str] = []
    groups = dict.fromkeys((r.op, r.corpus) for r in results.rows)
    for op, corpus in groups:
        info = results.corpora[corpus]
        lines.append(f"\n{op} {corpus} ({info['messages']:,} messages, {info['bytes'] / 1e6:.2f} MB)")
        lines.append(f"  {'contender':<38} {'msgs/s':>12} {'MB/s':>9} {'us/msg':>9} {'t/orjson':>9}")
        lines += [_row_line(r) for r in results.rows if (r.op, r.corpus) == (op, corpus)]
    return lines


def _frames_text(frames: list[FrameRow], chunk: int) -> list[str]:
    if not frames:
        return []
    sizes = list(dict.fromkeys(f.size for f in frames))
    head = "".join(f"{f'{s // MIB} MiB':>11}" for s in sizes)
    title = f"one frame fed in {chunk // 1024} KiB chunks (orjson: whole), ns per byte (flat is the target)"
    lines = [f"\n{title}", f"  {'contender':<38}{head}{'growth':>9}"]
    for key in dict.fromkeys(f.key for f in frames):
        mine = [f for f in frames if f.key == key]
        if mine[0].status != "ok":
            lines.append(f"  {mine[0].label:<38} {_why(mine[0].status, mine[0].reason)}")
            continue
        cells = "".join(f"{_num(f.ns_per_byte, 3):>11}" for f in mine)
        first, last = mine[0].ns_per_byte, mine[-1].ns_per_byte
        growth = f"{last / first:.2f}x" if first and last and len(mine) > 1 else "-"
        lines.append(f"  {mine[0].label:<38}{cells}{growth:>9}")
    return lines


def _strict_text(results: Results) -> list[str]:
    if not results.strict:
        return []
    settings = results.settings
    lines = [
        f"\nstrict decode: {settings.chunk // 1024} KiB chunks to every contender, "
        f"framing counted on every side, each chunk's messages dropped once counted, cyclic GC off, "
        f"medians of {settings.strict_rounds} interleaved rounds, values checked against json first"
    ]
    for corpus in dict.fromkeys(r.corpus for r in results.strict):
        info = results.corpora.get(corpus, {})
        mine = [r for r in results.strict if r.corpus == corpus]
        lines.append(f"\n  {corpus} ({mine[0].messages:,} messages, {mine[0].nbytes / 1e6:.2f} MB)")
        head = f"{'wall ms':>9} {'cpu ms':>9} {'cpu us/msg':>11} {'wall/orjson':>12} {'cpu/orjson':>11}"
        lines.append(f"  {'contender':<38} {head}")
        for row in mine:
            if row.status != "ok":
                lines.append(f"  {row.label:<38} {_why(row.status, row.reason)}")
                continue
            wall, cpu = row.wall_median or 0.0, row.cpu_median or 0.0
            ratios = f"{_num(row.wall_ratio):>11}x {_num(row.cpu_ratio):>10}x"
            per = cpu / row.messages * 1e6
            lines.append(f"  {row.label:<38} {wall * 1e3:>9.1f} {cpu * 1e3:>9.1f} {per:>11.3f} {ratios}")
        if "seed" in info:
            lines.append(
                f"  (seed {info['seed']}, sha256 {info['sha256'][:16]}..., cached at {info['path']})"
            )
    return lines


def _instructions_text(results: Results) -> list[str]:
    if not results.instructions:
        return []
    lines = [
        "\ninstructions (valgrind --tool=callgrind, one child per contender, a baseline child's start-up "
        "subtracted; cyclic GC off)"
    ]
    for corpus in dict.fromkeys(r.corpus for r in results.instructions):
        mine = [r for r in results.instructions if r.corpus == corpus]
        lines.append(f"\n  {corpus} slice ({mine[0].messages:,} messages, {mine[0].nbytes / 1e6:.2f} MB)")
        lines.append(f"  {'contender':<38} {'instructions':>14} {'per msg':>10} {'/orjson':>9}")
        for row in mine:
            if row.status != "ok":
                lines.append(f"  {row.label:<38} {_why(row.status, row.reason)}")
                continue
            ratio = f"{row.ratio:.3f}x" if row.ratio is not None else "-"
            lines.append(
                f"  {row.label:<38} {row.instructions or 0:>14,} {_num(row.per_message, 0):>10} {ratio:>9}"
            )
    return lines


def _verdict(target: Target) -> str:
    if target.met is None:
        return f"{target.corpus} n/a"
    mark = "MET" if target.met else "MISSED"
    return f"{target.corpus} {target.value:.2f}x {mark}"


def _targets_text(targets: list[Target]) -> list[str]:
    lines = [
        "\ntargets (ratios per corpus, strict ones per corpus and clock; frames: per-byte cost, "
        "largest over smallest)"
    ]
    for name in dict.fromkeys(t.name for t in targets):
        mine = [t for t in targets if t.name == name]
        goal = f"{name} {mine[0].compare} {mine[0].threshold:g}x"
        lines.append(f"  {goal:<56} " + " | ".join(_verdict(t) for t in mine))
    met = sum(t.met is True for t in targets)
    unknown = sum(t.met is None for t in targets)
    lines.append(
        f"  {met} of {len(targets)} met, {len(targets) - met - unknown} missed, {unknown} not measurable"
    )
    return lines


def _span(values: list[float]) -> str:
    """``1.4x`` or ``1.1x to 1.4x``: a speed factor over the corpora."""
    low, high = min(values), max(values)
    return f"{low:.1f}x" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}x to {high:.1f}x"


def _speeds(rows: list[Row], op: str, key: str, base: str) -> list[float]:
    """How many times faster ``key`` was than ``base`` on each corpus (both measured)."""
    times = {(r.corpus, r.key): r.best_s for r in rows if r.op == op and r.status == "ok" and r.best_s}
    return [
        times[(corpus, base)] / mine
        for (corpus, k), mine in times.items()
        if k == key and (corpus, base) in times
    ]


_PLAIN: tuple[tuple[str, str, str, str], ...] = (
    # (operation, contender, compared with, the sentence's subject and object)
    ("decode", "native-eager", "orjson", "decoding, mcpframe (native core) ran {} the speed of orjson.loads"),
    ("decode", "native-lazy", "orjson", "  with lazy params (envelope checked, params kept as raw JSON) {}"),
    ("decode", "native-eager", "mcp-sdk", "  and {} the speed of the official mcp SDK's message validation"),
    (
        "encode",
        "native-encode",
        "orjson",
        "encoding, mcpframe (native core) ran {} the speed of orjson.dumps",
    ),
    (
        "decode",
        "python-eager",
        "orjson",
        "without Rust (python core), decoding ran {} the speed of orjson.loads",
    ),
)


def _rounds(count: int) -> str:
    return "one round" if count == 1 else f"best of >= {count} rounds"


def _plain_summary(results: Results) -> list[str]:
    """What was measured and how mcpframe compared, in words a user reads (speeds: higher is faster)."""
    settings = results.settings
    timed = {name: results.corpora[name] for name in dict.fromkeys(r.corpus for r in results.rows)}
    count = sum(info["messages"] for info in timed.values())
    size = sum(info["bytes"] for info in timed.values()) / 1e6
    lines = [
        "\nsummary",
        f"  measured: decoding and encoding {count:,} MCP JSON-RPC messages ({size:.1f} MB, corpora "
        f"{', '.join(timed)}), {settings.clock} clock, {_rounds(settings.min_rounds)}",
    ]
    if settings.quick:
        lines.append(
            "  --quick: tiny corpora and one round: a smoke test, these figures are not a measurement"
        )
    said = False
    for op, key, base, sentence in _PLAIN:
        speeds = _speeds(results.rows, op, key, base)
        if speeds:
            lines.append("  " + sentence.format(_span(speeds)))
            said = True
    if not said:
        lines.append("  no comparison: the native core or orjson was unavailable (see the rows above)")
    return lines


def summary(env: dict[str, Any]) -> str:
    """One line naming the machine and the backends (the chart's subtitle)."""
    states = ", ".join(
        f"{name} {'ok' if state == 'available' else 'unavailable'}" for name, state in env["backends"].items()
    )
    return (
        f"mcpframe {env['mcpframe']}, Python {env['python']}, {env['platform']}, {env['cpus']} CPUs; {states}"
    )


def method(results: Results) -> str:
    """How the figures were taken, for the chart: clock, rounds, chunk, and whether this was a smoke run."""
    settings = results.settings
    how = (
        f"{settings.clock} clock, {_rounds(settings.min_rounds)}, streaming decoders fed "
        f"{settings.chunk // 1024} KiB chunks"
    )
    if settings.quick:
        return f"--quick SMOKE RUN (tiny corpora, one round): NOT A MEASUREMENT; {how}"
    return how


def render(results: Results, env: dict[str, Any], *, targets: bool = False) -> str:
    """The report printed by ``mcpframe bench``: tables, then a summary in words (``targets``: the project's
    own goals, met or missed, after it)."""
    settings = results.settings
    backends = "; ".join(f"{name}: {state}" for name, state in env["backends"].items())
    rounds = (
        f"best of >= {settings.min_rounds} rounds ({settings.budget:g} s budget each, {settings.clock} clock)"
    )
    lines = [
        f"mcpframe {env['mcpframe']} benchmark: Python {env['python']}, {env['platform']}, "
        f"{env['cpus']} CPUs",
        f"backends: {backends}",
        f"timing: {rounds}; streaming decoders fed {settings.chunk // 1024} KiB chunks"
        + ("; --quick (tiny corpora, indicative only)" if settings.quick else ""),
    ]
    busy = busy_note(settings.clock, env["cpus"], _load())
    if busy is not None:
        lines.append(busy)
    lines.append("t/orjson: time relative to orjson on the same corpus and operation (lower is faster)")
    lines += _rows_text(results)
    lines += _frames_text(results.frames, settings.chunk)
    lines += _strict_text(results)
    lines += _instructions_text(results)
    if results.rows:
        lines += _plain_summary(results)
    if targets:
        lines += _targets_text(results.targets)
    else:
        lines.append("  (the project's own speed goals, met or missed: mcpframe bench --targets)")
    return "\n".join(lines) + "\n"


def to_json(results: Results, env: dict[str, Any]) -> dict[str, Any]:
    """The JSON document written by ``--json``."""
    settings = results.settings
    return {
        "schema": SCHEMA,
        "environment": env,
        "settings": {
            "corpora": list(settings.corpora),
            "quick": settings.quick,
            "chunk": settings.chunk,
            "frame_sizes": list(settings.sizes()),
            "min_rounds": settings.min_rounds,
            "budget_s": settings.budget,
            "statistic": "best",
            "clock": settings.clock,
            "seed": settings.seed,
            "strict_rounds": settings.strict_rounds,
            "strict_statistic": "median",
            "strict_results_retained": "per chunk, dropped once counted",
            "instruction_slice_bytes": settings.slice_bytes,
        },
        "corpora": results.corpora,
        "results": [row.to_json() for row in results.rows],
        "frames": [frame.to_json() for frame in results.frames],
        "strict": [row.to_json() for row in results.strict],
        "instructions": [row.to_json() for row in results.instructions],
        "targets": [target.__dict__ for target in results.targets],
    }
