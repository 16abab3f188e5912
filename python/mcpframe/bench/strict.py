"""Streaming decode the strict way: every contender reads the same 64 KiB chunks.

Each contender is a feeder: ``start()`` gives ``(feed, close)``; ``feed(chunk)`` returns the messages
that chunk completed, ``close()`` the rest. Framing is counted on every side: the orjson and msgspec
contenders split lines in Python and carry a partial line over to the next chunk, as a real reader
must. Results are retained alike: every contender's list of one chunk's messages is counted and dropped
before the next chunk (none keeps a whole corpus alive, so none pays for a growing heap the others do
not). Timing: the cyclic GC off for all (one ``gc.collect()`` before each run), contenders interleaved
in a rotating order over ``rounds`` rounds, wall and CPU time of each run, medians. Every contender's
decoded values are checked against the stdlib ``json`` reading of each line before anything is timed.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec
import orjson

from mcpframe.bench import generated
from mcpframe.bench.corpus import CorpusName, build
from mcpframe.core import load_backend

__all__ = [
    "KEYS",
    "Feeder",
    "Source",
    "StrictRow",
    "check",
    "feeders",
    "from_bytes",
    "from_file",
    "measure",
    "run_once",
]

Feed = Callable[[bytes], Sequence[Any]]
Close = Callable[[], Sequence[Any]]
Canon = tuple[str, Any, Any, Any]  # kind, id, method, payload

#: The contenders, in report order.
KEYS = ("native-eager", "native-lazy", "python-eager", "orjson", "msgspec-raw-line")
_LABELS = {
    "native-eager": "mcpframe native (eager)",
    "native-lazy": "mcpframe native (lazy)",
    "python-eager": "mcpframe python (eager)",
    "orjson": "split + orjson.loads per line",
    "msgspec-raw-line": "split + msgspec Struct/Raw per line",
}
_U64 = 2**64


@dataclass(frozen=True)
class Source:
    """Bytes to decode, already cut into chunks (held in memory: far bigger than the CPU caches)."""

    name: str
    chunks: tuple[bytes, ...]
    messages: int
    nbytes: int


def _source(name: str, pieces: Iterator[bytes], chunk: int) -> Source:
    data = b"".join(pieces)
    data = data[: data.rfind(b"\n") + 1]  # whole lines only: a slice must not end inside a frame
    cut = tuple(data[i : i + chunk] for i in range(0, len(data), chunk))
    return Source(name, cut, data.count(b"\n"), len(data))


def from_bytes(name: str, data: bytes, chunk: int = generated.CHUNK) -> Source:
    """A source from an in-memory corpus (the built-in ones)."""
    return _source(name, iter((data,)), chunk)


def from_file(name: str, path: Path, chunk: int = generated.CHUNK, limit: int | None = None) -> Source:
    """A source read from a corpus file in ``chunk``-byte reads (its first ``limit`` bytes, whole lines)."""
    return _source(name, generated.chunks(path, chunk, limit), chunk)


def builtin(name: CorpusName, chunk: int = generated.CHUNK) -> Source:
    """One of :mod:`mcpframe.bench.corpus`'s corpora as a source."""
    return from_bytes(name, build(name).data, chunk)


@dataclass(frozen=True)
class Feeder:
    """One streaming decoder: ``start()`` returns a fresh ``(feed, close)`` pair."""

    key: str
    label: str
    start: Callable[[], tuple[Feed, Close]]
    canon: Callable[[Any], Canon]
    lossy_big_ints: bool = False  # orjson reads integers beyond 64 bits as floats


def _line_feeder(decode: Callable[[bytes], Any]) -> Callable[[], tuple[Feed, Close]]:
    """What a reader built on a per-line decoder does: split, decode whole lines, carry the rest."""

    def start() -> tuple[Feed, Close]:
        pending: list[bytes] = []

        def feed(chunk: bytes) -> list[Any]:
            if b"\n" not in chunk:
                pending.append(chunk)
                return []
            if pending:
                pending.append(chunk)
                chunk = b"".join(pending)
                pending.clear()
            parts = chunk.split(b"\n")
            tail = parts.pop()
            if tail:
                pending.append(tail)
            return [decode(part) for part in parts if part]

        def close() -> list[Any]:
            rest = b"".join(pending)
            pending.clear()
            return [decode(rest)] if rest.strip() else []

        return feed, close

    return start


def _dict_canon(message: dict[str, Any]) -> Canon:
    ident = message.get("id")
    if "method" in message:
        kind = "request" if "id" in message else "notification"
        return kind, ident, message["method"], message.get("params")
    if "error" in message:
        return "error", ident, None, message["error"]
    return "result", ident, None, message["result"]


def _message_canon(message: Any) -> Canon:
    kind = message.kind
    payload = message.error if kind == "error" else message.result if kind == "result" else message.params
    return kind, message.id, message.method, payload


class Envelope(msgspec.Struct):
    """A typed JSON-RPC envelope whose payloads stay undecoded (``msgspec.Raw``)."""

    jsonrpc: Literal["2.0"]
    id: int | str | msgspec.UnsetType | None = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


def _raw(value: msgspec.Raw) -> Any:
    return msgspec.json.decode(value) if len(value) else None


def _envelope_canon(env: Envelope) -> Canon:
    ident = None if env.id is msgspec.UNSET else env.id
    if not isinstance(env.method, msgspec.UnsetType):
        kind = "notification" if env.id is msgspec.UNSET else "request"
        return kind, ident, env.method, _raw(env.params)
    if len(env.error):
        return "error", ident, None, _raw(env.error)
    return "result", ident, None, _raw(env.result)


def _native_feeder(backend: str, lazy: bool) -> Feeder | None:
    try:
        decoder_cls = load_backend(backend).Decoder
    except Exception:  # the backend does not import here: the contender is left out, with a note
        return None

    def start() -> tuple[Feed, Close]:
        decoder = decoder_cls(lazy=lazy)
        return decoder.feed, decoder.close

    key = f"{backend}-{'lazy' if lazy else 'eager'}"
    return Feeder(key, _LABELS[key], start, _message_canon)


def feeders() -> dict[str, Feeder]:
    """Every available contender by key (a backend that does not import is missing)."""
    envelope = msgspec.json.Decoder(Envelope).decode
    found = [
        _native_feeder("native", False),
        _native_feeder("native", True),
        _native_feeder("python", False),
        Feeder("orjson", _LABELS["orjson"], _line_feeder(orjson.loads), _dict_canon, lossy_big_ints=True),
        Feeder("msgspec-raw-line", _LABELS["msgspec-raw-line"], _line_feeder(envelope), _envelope_canon),
    ]
    return {f.key: f for f in found if f is not None}


def run_once(feeder: Feeder, chunks: Sequence[bytes]) -> int:
    """Decode every chunk, dropping each chunk's messages once counted; the number of messages."""
    feed, close = feeder.start()
    count = 0
    for chunk in chunks:
        count += len(feed(chunk))
    return count + len(close())


def _same(got: Any, want: Any, lossy: bool) -> bool:
    """Equal values of the same types (``1`` is not ``1.0`` nor ``True``); with ``lossy``, a float for an
    integer beyond the 64-bit range counts as equal when it is that integer's nearest float."""
    if type(got) is not type(want):
        out_of_range = type(want) is int and not -(2**63) <= want < _U64
        return lossy and out_of_range and type(got) is float and got == float(want)
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[k], v, lossy) for k, v in want.items())
    if isinstance(want, list | tuple):
        return len(got) == len(want) and all(_same(g, w, lossy) for g, w in zip(got, want, strict=True))
    return bool(got == want)


def _reference(chunks: Sequence[bytes]) -> Iterator[Canon]:
    data = b"".join(chunks)
    for line in data.split(b"\n"):
        if line:
            yield _dict_canon(json.loads(line))


def _batches(feeder: Feeder, chunks: Sequence[bytes]) -> Iterator[Sequence[Any]]:
    feed, close = feeder.start()
    for chunk in chunks:
        yield feed(chunk)
    yield close()


def check(feeder: Feeder, source: Source) -> str | None:
    """None if ``feeder`` decodes ``source`` to the stdlib ``json`` values line by line, else the first
    difference."""
    want = _reference(source.chunks)
    index = 0
    for batch in _batches(feeder, source.chunks):
        for message in batch:
            expected = next(want, None)
            if expected is None:
                return f"more than the {source.messages} messages"
            got = feeder.canon(message)
            if not _same(got, expected, feeder.lossy_big_ints):
                return f"message {index}: got {str(got)[:120]}, expected {str(expected)[:120]}"
            index += 1
    if index != source.messages:
        return f"{index} messages, expected {source.messages}"
    return None


@dataclass
class StrictRow:
    """One contender on one source: medians of wall and CPU time, ratios to orjson's."""

    corpus: str
    key: str
    label: str
    messages: int
    nbytes: int
    status: str = "ok"
    reason: str | None = None
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    wall_ratio: float | None = None
    cpu_ratio: float | None = None

    @property
    def wall_median(self) -> float | None:
        """Median wall time of one pass, seconds."""
        return statistics.median(self.wall_s) if self.wall_s else None

    @property
    def cpu_median(self) -> float | None:
        """Median CPU time of one pass, seconds."""
        return statistics.median(self.cpu_s) if self.cpu_s else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with the medians."""
        return {**self.__dict__, "wall_median_s": self.wall_median, "cpu_median_s": self.cpu_median}


def _interleave(chosen: list[Feeder], rows: dict[str, StrictRow], source: Source, rounds: int) -> None:
    enabled = gc.isenabled()
    gc.disable()  # for every contender alike: no collector pass lands inside one run and not another
    try:
        for done in range(rounds):
            shift = done % len(chosen)
            for feeder in chosen[shift:] + chosen[:shift]:
                gc.collect()
                wall, cpu = time.perf_counter(), time.process_time()
                count = run_once(feeder, source.chunks)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                if count != source.messages:
                    raise RuntimeError(f"{feeder.label} decoded {count} of {source.messages} messages")
                rows[feeder.key].wall_s.append(wall)
                rows[feeder.key].cpu_s.append(cpu)
    finally:
        if enabled:
            gc.enable()


def measure(source: Source, rounds: int, say: Callable[[str], None]) -> list[StrictRow]:
    """Check every contender on ``source``, then time the good ones interleaved over ``rounds`` rounds."""
    available = feeders()
    rows: dict[str, StrictRow] = {}
    chosen: list[Feeder] = []
    for key in KEYS:
        row = StrictRow(source.name, key, _LABELS[key], source.messages, source.nbytes)
        rows[key] = row
        feeder = available.get(key)
        if feeder is None:
            row.status, row.reason = "unavailable", "its backend does not import here"
            continue
        say(f"strict decode {source.name}: checking {feeder.label}")
        try:
            problem = check(feeder, source)
        except Exception as exc:  # a crashing contender is a failed row, not a crashed benchmark
            problem = f"{type(exc).__name__}: {exc}"
        if problem is not None:
            row.status, row.reason = "failed", problem
        else:
            chosen.append(feeder)
    if chosen:
        say(f"strict decode {source.name}: {len(chosen)} contenders x {rounds} rounds, interleaved, GC off")
        _interleave(chosen, rows, source, rounds)
    base = rows["orjson"]
    for row in rows.values():
        if row.wall_median and base.wall_median and row.cpu_median and base.cpu_median:
            row.wall_ratio = row.wall_median / base.wall_median
            row.cpu_ratio = row.cpu_median / base.cpu_median
    return list(rows.values())
