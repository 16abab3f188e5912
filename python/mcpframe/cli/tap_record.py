"""What `mcpframe tap` records: frames cut by the core's lazy `Decoder`, one JSONL record per frame.

The forwarding threads call `Recorder.observe(direction, chunk)` *after* they have written the chunk on,
so observing never delays bytes already read. Records go to the log writer through a bounded queue:
when it is full the record is dropped and counted (said once on stderr), never waited for, so a slow
log file cannot hold the pipes back or grow the tap's memory. The per-method statistics and the
request/answer matching are kept here, beside the decoder, so they stay exact even when records drop.

A bad frame's record carries the frame whole (`FrameError.raw`) as text, invalid UTF-8 replaced by
U+FFFD (`"raw"`), and the same bytes base64-encoded (`"raw_b64"`), so nothing is lost.
"""

from __future__ import annotations

import base64
import json
import math
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from mcpframe import core

__all__ = ["Direction", "MethodStats", "Recorder"]

Direction = Literal["c2s", "s2c"]
_OTHER: dict[Direction, Direction] = {"c2s": "s2c", "s2c": "c2s"}
# A server that never answers must not make the pending map grow for ever: past this many requests in
# flight the oldest is forgotten (its answer, if it comes, is recorded without a latency).
MAX_PENDING = 100_000
# The queue to the log writer is bounded twice: by records, and by the bytes they carry (a bad frame's
# record holds the frame whole, up to the decoder's frame limit), so a stalled log holds at most this much.
QUEUE_RECORDS = 10_000
QUEUE_BYTES = 64 * 1024 * 1024
# Method names come from the peers: a client sending endless new names must not grow the table; past
# this many, the rest are counted under one row.
MAX_METHODS = 1_000
OTHER_METHODS = "(other methods)"
# Latencies go into a log-scale histogram (buckets 1% wide, from 1 µs): memory stays bounded however many
# answers pass, and a percentile read off it is within 1% of the exact one.
_GROWTH = 1.01
_LOG_GROWTH = math.log(_GROWTH)
_STOP = None


@dataclass
class MethodStats:
    """Per method: messages seen (requests and notifications) and a histogram of answer latencies."""

    count: int = 0
    answers: int = 0
    buckets: dict[int, int] = field(default_factory=dict)

    def add_latency(self, milliseconds: float) -> None:
        """Count one answer that took ``milliseconds``."""
        micros = milliseconds * 1000.0
        bucket = int(math.log(micros) / _LOG_GROWTH) if micros > 1.0 else 0
        self.buckets[bucket] = self.buckets.get(bucket, 0) + 1
        self.answers += 1

    def latency(self, fraction: float) -> float | None:
        """The nearest-rank ``fraction`` percentile in milliseconds (the bucket's upper edge), or None."""
        if not self.answers:
            return None
        rank = max(1, min(self.answers, math.ceil(fraction * self.answers)))
        seen = 0
        for bucket in sorted(self.buckets):
            seen += self.buckets[bucket]
            if seen >= rank:
                return _GROWTH ** (bucket + 1) / 1000.0 if bucket else 0.001
        raise AssertionError("unreachable: the buckets add up to answers")


class Recorder:
    """Cuts both directions into frames and hands records to a writer thread (see the module doc)."""

    def __init__(self, log: TextIO | None, pretty: TextIO | None, *, colour: bool, warn: TextIO) -> None:
        self._decoders: dict[Direction, Any] = {d: core.Decoder(lazy=True) for d in ("c2s", "s2c")}
        self._pending: dict[tuple[Direction, str], tuple[float, str | None]] = {}
        self._lock = threading.Lock()  # the two forwarding threads share pending and stats
        self.stats: dict[str, MethodStats] = {}
        self.frames = 0
        self.dropped = 0
        self._queued_bytes = 0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE_RECORDS)
        self._log, self._pretty, self._colour, self._warn = log, pretty, colour, warn
        self._writer: threading.Thread | None = None
        if log is not None or pretty is not None:
            self._writer = threading.Thread(target=self._write_loop, name="tap-log", daemon=True)
            self._writer.start()

    def observe(self, direction: Direction, chunk: bytes) -> None:
        """Record every frame ``chunk`` completes in ``direction``."""
        self._record(direction, self._decoders[direction].feed(chunk))

    def end(self, direction: Direction) -> None:
        """``direction`` reached EOF: an unterminated last frame is recorded too."""
        decoder = self._decoders[direction]
        if not decoder.closed:
            self._record(direction, decoder.close())

    def close(self) -> None:
        """Flush the writer (everything queued is written) and stop it."""
        if self._writer is not None:
            self._queue.put(_STOP)  # blocking is fine here: the pipes are done
            self._writer.join()

    def _record(self, direction: Direction, items: list[Any]) -> None:
        if not items:
            return
        now = time.monotonic()
        with self._lock:
            records = [self._describe(direction, item, now) for item in items]
        if self._writer is None:
            return
        for record in records:
            weight = _weight(record)
            with self._lock:
                fits = self._queued_bytes + weight <= QUEUE_BYTES
                if fits:
                    self._queued_bytes += weight
            try:
                if not fits:
                    raise queue.Full
                self._queue.put_nowait(record)
            except queue.Full:
                with self._lock:
                    if fits:
                        self._queued_bytes -= weight
                    self.dropped += 1
                    first = self.dropped == 1
                if first:
                    self._warn.write("mcpframe tap: the log cannot keep up; dropping records (counted)\n")
                    self._warn.flush()

    def _describe(self, direction: Direction, item: Any, now: float) -> dict[str, Any]:
        self.frames += 1
        if isinstance(item, core.FrameError):
            return _bad_frame(direction, item, now)
        record: dict[str, Any] = {"dir": direction, "t": now, "size": len(item.raw), "kind": item.kind}
        method: str | None = item.method
        message_id = item.id
        if message_id is not None:
            record["id"] = message_id
        key = (direction, json.dumps(message_id)) if message_id is not None else None
        if item.kind in ("request", "notification"):
            record["method"] = method
            self._stats_of(method).count += 1
            if item.kind == "request" and key is not None:
                if len(self._pending) >= MAX_PENDING:
                    self._pending.pop(next(iter(self._pending)))
                self._pending[key] = (now, method)
        elif key is not None:
            asked = self._pending.pop((_OTHER[direction], key[1]), None)
            if asked is not None:
                latency = (now - asked[0]) * 1000.0
                record["method"] = asked[1]
                record["latency_ms"] = round(latency, 3)
                self._stats_of(asked[1]).add_latency(latency)
        if item.batch is not None:
            record["batch"] = item.batch
        return record

    def _stats_of(self, method: str | None) -> MethodStats:
        name = str(method)
        entry = self.stats.get(name)
        if entry is None:
            if len(self.stats) >= MAX_METHODS:
                name = OTHER_METHODS
            entry = self.stats.setdefault(name, MethodStats())
        return entry

    def _write_loop(self) -> None:
        while (record := self._queue.get()) is not _STOP:
            with self._lock:
                self._queued_bytes -= _weight(record)
            if self._log is not None:
                self._log.write(json.dumps(record, ensure_ascii=False) + "\n")
            if self._pretty is not None:
                self._pretty.write(pretty_line(record, self._colour) + "\n")
        for stream in (self._log, self._pretty):
            if stream is not None:
                stream.flush()


def _weight(record: dict[str, Any]) -> int:
    """What a queued record holds, roughly: a bad frame's bytes (twice: text and base64), else a little."""
    return 256 + 3 * record["size"] if record["kind"] == "invalid" else 256


def _bad_frame(direction: Direction, error: Any, now: float) -> dict[str, Any]:
    """A frame the decoder refused: the error and the frame whole (or its preview when oversize)."""
    raw: bytes | None = error.raw
    whole = raw is not None
    data = raw if raw is not None else error.preview
    record: dict[str, Any] = {
        "dir": direction,
        "t": now,
        "size": len(data),
        "kind": "invalid",
        "error": {"code": error.code, "message": error.message},
        "raw": data.decode("utf-8", errors="replace"),
        "raw_b64": base64.b64encode(data).decode("ascii"),
    }
    if error.id is not None:
        record["id"] = error.id
    if not whole:
        record["truncated"] = True  # an oversize frame: only its first bytes are kept by the decoder
    return record


_COLOURS = {"c2s": "\x1b[36m", "s2c": "\x1b[35m", "invalid": "\x1b[31m"}
_ARROWS = {"c2s": "-->", "s2c": "<--"}


def pretty_line(record: dict[str, Any], colour: bool) -> str:
    """One human line for a record: arrow, kind, method, id, size, latency."""
    parts = [_ARROWS[record["dir"]], record["kind"]]
    if record.get("method") is not None:
        parts.append(str(record["method"]))
    if "id" in record:
        parts.append(f"id={json.dumps(record['id'])}")
    parts.append(f"{record['size']}B")
    if "latency_ms" in record:
        parts.append(f"{record['latency_ms']:.3f}ms")
    if "error" in record:
        parts.append(f"{record['error']['message']}: {record['raw'][:80]!r}")
    line = " ".join(parts)
    if not colour:
        return line
    tint = _COLOURS["invalid" if record["kind"] == "invalid" else record["dir"]]
    return f"{tint}{line}\x1b[0m"
