"""Runs the contenders side by side: check each output once, then time them, and judge the targets.

The contenders of one corpus are timed interleaved, one whole-corpus run each per round, for at least
``min_rounds`` rounds and more while the budget lasts (``budget`` seconds per contender). A figure is the
best round: on a shared machine the minimum is the one least disturbed by other processes. The median
is kept in the JSON results too.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from mcpframe.bench.contenders import Contender, Timed, decoders, encoders
from mcpframe.bench.corpus import Corpus, CorpusName, big_frame, build

__all__ = ["FrameRow", "Results", "Row", "Settings", "Target", "judge", "judge_frames", "run"]

Status = Literal["ok", "unavailable", "failed"]
Progress = Callable[[str], None]
MIB = 1024 * 1024

_QUICK_SCALE: dict[str, float] = {"small": 0.04, "mixed": 0.04, "large": 0.125}
_FRAME_KEYS = ("native-eager", "native-lazy", "python-eager", "orjson")


@dataclass(frozen=True)
class Settings:
    """What to run and for how long."""

    corpora: tuple[CorpusName, ...] = ("small", "mixed", "large")
    quick: bool = False
    chunk: int = 64 * 1024
    frame_sizes: tuple[int, ...] = (1 * MIB, 8 * MIB, 32 * MIB)
    clock: Literal["wall", "cpu"] = "wall"

    @property
    def budget(self) -> float:
        """Seconds of timing per measurement (beyond the minimum rounds)."""
        return 0.01 if self.quick else 0.2

    @property
    def min_rounds(self) -> int:
        """Rounds timed at the least, whatever the budget."""
        return 1 if self.quick else 3

    def scale(self, name: CorpusName) -> float:
        """Fraction of the standard corpus size used."""
        return _QUICK_SCALE[name] if self.quick else 1.0

    def sizes(self) -> tuple[int, ...]:
        """Frame sizes of the per-byte scaling runs."""
        return self.frame_sizes[:1] if self.quick else self.frame_sizes


@dataclass
class Row:
    """One contender on one corpus."""

    op: str
    corpus: str
    key: str
    label: str
    status: Status
    reason: str | None
    messages: int
    nbytes: int
    best_s: float | None = None
    median_s: float | None = None
    rounds: int = 0
    ratio: float | None = None  # time relative to orjson on the same corpus and operation

    @property
    def msgs_per_s(self) -> float | None:
        """Messages per second."""
        return self.messages / self.best_s if self.best_s else None

    @property
    def mb_per_s(self) -> float | None:
        """Megabytes (10**6 bytes) per second."""
        return self.nbytes / self.best_s / 1e6 if self.best_s else None

    @property
    def us_per_msg(self) -> float | None:
        """Microseconds per message."""
        return self.best_s / self.messages * 1e6 if self.best_s else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict, derived figures included."""
        derived = {"msgs_per_s": self.msgs_per_s, "mb_per_s": self.mb_per_s, "us_per_msg": self.us_per_msg}
        return {**self.__dict__, **derived}


@dataclass
class FrameRow:
    """One decoder on one big frame fed in chunks."""

    key: str
    label: str
    size: int
    status: Status
    reason: str | None
    best_s: float | None = None

    @property
    def ns_per_byte(self) -> float | None:
        """Nanoseconds per byte of frame."""
        return self.best_s / self.size * 1e9 if self.best_s else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        mb_per_s = self.size / self.best_s / 1e6 if self.best_s else None
        return {**self.__dict__, "ns_per_byte": self.ns_per_byte, "mb_per_s": mb_per_s}


@dataclass(frozen=True)
class Target:
    """One goal of the project, judged on one corpus (``met`` is None when a side is unavailable)."""

    name: str
    corpus: str
    value: float | None
    threshold: float
    compare: Literal["<=", ">="]
    met: bool | None


@dataclass
class Results:
    """Everything one run measured."""

    settings: Settings
    corpora: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    frames: list[FrameRow] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)


def _interleaved(fns: dict[str, Timed], settings: Settings) -> dict[str, list[float]]:
    # Round-robin: each round runs every contender once, so a burst of load from other processes hits
    # them all alike and the ratios stay steady. "cpu" (this process's CPU time) also ignores the time
    # other processes hold the cores. The order rotates from round to round: a contender run right
    # after a slow one that leaves the caches and the allocator in its own state (the python encoder
    # before orjson cost orjson 0.2-0.3 us per message) would otherwise pay for it in every round.
    clock = time.process_time if settings.clock == "cpu" else time.perf_counter
    times: dict[str, list[float]] = {key: [] for key in fns}
    order = list(fns.items())
    gc.collect()
    deadline = time.perf_counter() + settings.budget * len(fns)
    rounds = 0
    while rounds < settings.min_rounds or (time.perf_counter() < deadline and rounds < 1000):
        shift = rounds % len(order)
        for key, fn in order[shift:] + order[:shift]:
            start = clock()
            fn()
            times[key].append(clock() - start)
        rounds += 1
    return times


def _checked(
    contender: Contender, corpus: Corpus, settings: Settings
) -> tuple[Status, str | None, Timed | None]:
    """The contender's timed callable once its output has been checked, or why there is none."""
    if contender.unavailable is not None:
        return "unavailable", contender.unavailable, None
    try:
        fn = contender.prepare(corpus, settings.chunk)
        problem = contender.check(corpus, fn())
    except Exception as exc:  # a crashing contender is a failed row, not a crashed benchmark
        problem = f"{type(exc).__name__}: {exc}"
    if problem is not None:
        return "failed", problem, None
    return "ok", None, fn


def _measure_all(
    corpus: Corpus, contenders: list[Contender], settings: Settings, say: Progress
) -> dict[str, tuple[Status, str | None, list[float]]]:
    checked = {}
    for contender in contenders:
        say(f"{contender.op} {corpus.name}: checking {contender.label}")
        checked[contender.key] = _checked(contender, corpus, settings)
    fns = {key: fn for key, (_, _, fn) in checked.items() if fn is not None}
    say(f"{contenders[0].op} {corpus.name}: timing {len(fns)} contenders side by side")
    times = _interleaved(fns, settings) if fns else {}
    return {key: (status, reason, times.get(key, [])) for key, (status, reason, _) in checked.items()}


def _corpus_rows(corpus: Corpus, contenders: list[Contender], settings: Settings, say: Progress) -> list[Row]:
    rows: list[Row] = []
    measured = _measure_all(corpus, contenders, settings, say)
    for contender in contenders:
        status, reason, times = measured[contender.key]
        row = Row(
            contender.op,
            corpus.name,
            contender.key,
            contender.label,
            status,
            reason,
            corpus.count,
            corpus.nbytes,
        )
        if times:
            row.best_s, row.median_s, row.rounds = min(times), statistics.median(times), len(times)
        rows.append(row)
    base = next((r.best_s for r in rows if r.key == "orjson"), None)
    for row in rows:
        if base and row.best_s:
            row.ratio = row.best_s / base
    return rows


def _frame_rows(settings: Settings, say: Progress) -> list[FrameRow]:
    rows: list[FrameRow] = []
    chosen = [c for c in decoders() if c.key in _FRAME_KEYS]
    for size in settings.sizes():
        frame = big_frame(size)
        message = orjson.loads(frame)
        corpus = Corpus(f"frame {size // MIB} MiB", frame, (message,), (("result", message["id"]),))
        measured = _measure_all(corpus, chosen, settings, say)
        for contender in chosen:
            status, reason, times = measured[contender.key]
            best = min(times, default=None)
            rows.append(FrameRow(contender.key, contender.label, size, status, reason, best))
    return rows


def run(settings: Settings, say: Progress) -> Results:
    """Measure everything ``settings`` asks for; ``say`` receives one line per step."""
    results = Results(settings)
    decode, encode = decoders(), encoders()
    for name in settings.corpora:
        say(f"building corpus {name}")
        corpus = build(name, scale=settings.scale(name))
        results.corpora[name] = {"messages": corpus.count, "bytes": corpus.nbytes, "sha256": corpus.sha256}
        results.rows += _corpus_rows(corpus, decode, settings, say)
        results.rows += _corpus_rows(corpus, encode, settings, say)
    results.frames = _frame_rows(settings, say)
    results.targets = judge(results.rows) + judge_frames(results.frames)
    return results


def _best(rows: list[Row], corpus: str, key: str) -> float | None:
    return next((r.best_s for r in rows if r.op == "decode" and r.corpus == corpus and r.key == key), None)


def _target(name: str, corpus: str, value: float | None, threshold: float, at_most: bool) -> Target:
    met = None if value is None else (value <= threshold if at_most else value >= threshold)
    return Target(name, corpus, value, threshold, "<=" if at_most else ">=", met)


_KEYS = (
    "native-eager",
    "native-lazy",
    "python-eager",
    "orjson",
    "msgspec-raw",
    "msgspec-raw-line",
    "mcp-sdk",
)


def _ratio(t: dict[str, float | None], a: str, b: str) -> float | None:
    x, y = t[a], t[b]
    return x / y if x and y else None


def judge(rows: list[Row]) -> list[Target]:
    """The issue's targets, per corpus, on the decode timings (time ratios, ``x``)."""
    targets: list[Target] = []
    for corpus in dict.fromkeys(r.corpus for r in rows):
        t = {key: _best(rows, corpus, key) for key in _KEYS}
        targets += [
            _target("native eager time / orjson", corpus, _ratio(t, "native-eager", "orjson"), 0.8, True),
            _target("native lazy time / orjson", corpus, _ratio(t, "native-lazy", "orjson"), 0.3, True),
            _target(
                "msgspec Raw time / native lazy", corpus, _ratio(t, "msgspec-raw", "native-lazy"), 2.5, False
            ),
            _target(
                "msgspec Raw per-line time / native lazy",
                corpus,
                _ratio(t, "msgspec-raw-line", "native-lazy"),
                2.5,
                False,
            ),
            _target(
                "python backend time / native", corpus, _ratio(t, "python-eager", "native-eager"), 3.0, False
            ),
            _target("mcp SDK time / native", corpus, _ratio(t, "mcp-sdk", "native-eager"), 30.0, False),
        ]
    return targets


def _growth(frames: list[FrameRow], key: str, small: int, big: int) -> float | None:
    per_byte = {f.size: f.ns_per_byte for f in frames if f.key == key}
    lo, hi = per_byte.get(small), per_byte.get(big)
    return hi / lo if hi and lo else None


def judge_frames(frames: list[FrameRow]) -> list[Target]:
    """Flatness of the native decoders (<= 1.5x): their growth in ns per byte from the smallest to the
    largest frame, over orjson's growth on the same frames (which shows what the memory system adds:
    caches and page faults make every decoder dearer per byte on a 32 MiB frame)."""
    targets: list[Target] = []
    sizes = sorted({f.size for f in frames})
    if len(sizes) < 2:
        return targets
    reference = _growth(frames, "orjson", sizes[0], sizes[-1])
    for key in ("native-eager", "native-lazy"):
        growth = _growth(frames, key, sizes[0], sizes[-1])
        value = growth / reference if growth and reference else None
        name = f"{key} ns/byte growth {sizes[0] // MIB}->{sizes[-1] // MIB} MiB / orjson's"
        targets.append(_target(name, "frames", value, 1.5, True))
    return targets
