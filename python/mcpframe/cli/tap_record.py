"""What `mcpframe tap` records: frames cut by the core's lazy `Decoder`, one JSONL record per frame.

Forwarding comes first. A forwarding thread hands each chunk it read to the `Recorder` with `take`
(an append to a deque: no lock, no system call) just *before* writing it on, and calls `taken` after
the write: that wakes the recorder thread if it sleeps, and waits only when the recorder is too far
behind. Everything else (cutting frames, classifying them, matching answers to requests, the JSONL
log and the `--pretty` lines, the per-method statistics) runs on the recorder's own thread.
Taking the chunk before the write keeps the chunks in the order they were read, so a request is
always recorded before its answer (the answer can only be read after the request was written).

The chunks waiting for the recorder are bounded (`QUEUE_CHUNKS` chunks, `QUEUE_BYTES` bytes): past
that, the forwarding thread that went over waits until the recorder has caught up to half the bound.
A slow log file therefore slows the traffic down rather than losing records or growing memory; if
writing the log fails (a full disk), the tap says so once on stderr and stops writing it, and the
pipes go on. The per-method statistics and the request/answer matching stay exact either way.

A bad frame's record carries the frame whole (`FrameError.raw`) as text, invalid UTF-8 replaced by
U+FFFD (`"raw"`), and the same bytes base64-encoded (`"raw_b64"`), so nothing is lost.
"""

from __future__ import annotations

import base64
import collections
import json
import math
import queue
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from mcpframe import core

__all__ = ["Direction", "MethodStats", "Recorder"]

Direction = Literal["c2s", "s2c"]
_OTHER: dict[Direction, Direction] = {"c2s": "s2c", "s2c": "c2s"}
# A server that never answers must not make the pending map grow for ever: past this many requests in
# flight the oldest is forgotten (its answer, if it comes, is recorded without a latency).
MAX_PENDING = 100_000
# Chunks read but not yet recorded, bounded twice: by count and by the bytes they hold. A forwarding
# thread that finds either exceeded waits (the traffic slows to the log's pace; nothing is dropped).
QUEUE_CHUNKS = 4_096
QUEUE_BYTES = 16 * 1024 * 1024
# Method names come from the peers: a client sending endless new names must not grow the table; past
# this many, the rest are counted under one row.
MAX_METHODS = 1_000
# After a batch the recorder naps this long before looking again, instead of being woken per chunk:
# under steady traffic the forwarding threads never pay for a wake-up (a futex call, and the recorder
# then competing for the GIL just as the answer comes back), and records reach the log and --pretty at
# most this late. Only a recorder that found nothing after its nap sleeps until woken.
NAP_SECONDS = 0.005
OTHER_METHODS = "(other methods)"
# Latencies go into a log-scale histogram (buckets 1% wide, from 1 µs): memory stays bounded however many
# answers pass, and a percentile read off it is within 1% of the exact one. The first EXACT_LATENCIES of a
# method are also kept as they are (8 bytes each), so the exit table gives exact percentiles until then.
EXACT_LATENCIES = 100_000
_GROWTH = 1.01
_LOG_GROWTH = math.log(_GROWTH)


@dataclass
class MethodStats:
    """Per method: messages seen (requests and notifications) and a histogram of answer latencies."""

    count: int = 0
    answers: int = 0
    buckets: dict[int, int] = field(default_factory=dict)
    kept: array[float] | None = field(default_factory=lambda: array("d"))
    """Every latency so far, while there are at most ``EXACT_LATENCIES`` (then ``None``: the histogram)."""

    def add_latency(self, milliseconds: float) -> None:
        """Count one answer that took ``milliseconds``."""
        micros = milliseconds * 1000.0
        bucket = int(math.log(micros) / _LOG_GROWTH) if micros > 1.0 else 0
        self.buckets[bucket] = self.buckets.get(bucket, 0) + 1
        self.answers += 1
        kept = self.kept
        if kept is not None:
            if len(kept) < EXACT_LATENCIES:
                kept.append(milliseconds)
            else:  # past the bound: the histogram alone, memory stays bounded
                self.kept = None

    def exact(self, fraction: float) -> float | None:
        """The exact nearest-rank ``fraction`` percentile in milliseconds, or None (no answer yet, or more
        than ``EXACT_LATENCIES`` of them: ``latency`` then)."""
        kept = self.kept
        if not kept:
            return None
        rank = max(1, min(len(kept), math.ceil(fraction * len(kept))))
        return sorted(kept)[rank - 1]

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
    """Records both directions on its own thread, fed by the forwarding threads (see the module doc)."""

    def __init__(self, log: TextIO | None, pretty: TextIO | None, *, colour: bool, warn: TextIO) -> None:
        self._decoders: dict[Direction, Any] = {d: core.Decoder(lazy=True) for d in ("c2s", "s2c")}
        self._pending: dict[tuple[Direction, str], tuple[float, str | None]] = {}
        self.stats: dict[str, MethodStats] = {}
        self.frames = 0
        self._log, self._pretty, self._colour, self._warn = log, pretty, colour, warn
        # (direction, monotonic time of the read, chunk); chunk None: that direction ended; None: stop
        self._chunks: collections.deque[tuple[Direction, float, bytes | None] | None] = collections.deque()
        self._produced: dict[Direction, int] = {"c2s": 0, "s2c": 0}  # each written by its own thread
        self._consumed = 0  # written by the recorder thread only
        self._sleeping = False
        self._wake: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._room = threading.Condition()
        self._waiters = 0
        self._done = False  # the recorder thread has ended (closed, or failed): nothing waits for it
        self._thread = threading.Thread(target=self._run, name="tap-record", daemon=True)
        self._thread.start()

    def take(self, direction: Direction, chunk: bytes, at: float) -> None:
        """Queue ``chunk``, read in ``direction`` at monotonic time ``at``; call before writing it on."""
        if not self._done:
            self._chunks.append((direction, at, chunk))

    def taken(self, direction: Direction, size: int) -> None:
        """The chunk just taken (``size`` bytes) was written on: wake the recorder; wait if it is behind."""
        self._produced[direction] += size
        if self._sleeping:
            self._wake.put(None)
        if len(self._chunks) > QUEUE_CHUNKS or self._backlog() > QUEUE_BYTES:
            self._wait_for_room()

    def observe(self, direction: Direction, chunk: bytes) -> None:
        """`take` and `taken` at once: record ``chunk`` as read in ``direction`` now."""
        self.take(direction, chunk, time.monotonic())
        self.taken(direction, len(chunk))

    def end(self, direction: Direction) -> None:
        """``direction`` reached EOF: an unterminated last frame is recorded too."""
        self._chunks.append((direction, time.monotonic(), None))
        self.taken(direction, 0)

    def close(self) -> None:
        """Record everything taken so far, flush the log and stop the recorder thread."""
        self._chunks.append(None)
        self._wake.put(None)
        self._thread.join()

    def _backlog(self) -> int:
        return self._produced["c2s"] + self._produced["s2c"] - self._consumed

    def _behind(self) -> bool:
        """Over half the bound: a waiting forwarding thread goes on once the recorder is under it."""
        return not self._done and (
            len(self._chunks) > QUEUE_CHUNKS // 2 or self._backlog() > QUEUE_BYTES // 2
        )

    def _wait_for_room(self) -> None:
        with self._room:
            # counted before the check: the recorder notifies whenever it sees a waiter, so the wake-up
            # cannot fall between this check and the wait
            self._waiters += 1
            self._wake.put(None)  # a napping recorder starts at once
            try:
                while self._behind():
                    self._room.wait()
            finally:
                self._waiters -= 1

    def _run(self) -> None:
        chunks = self._chunks
        try:
            while True:
                while chunks:
                    item = chunks.popleft()
                    if item is None:
                        return
                    self._record(*item)
                    if self._waiters and not self._behind():
                        with self._room:
                            self._room.notify_all()
                try:
                    self._wake.get(timeout=NAP_SECONDS)
                except queue.Empty:
                    if not chunks:
                        self._sleep()
        except Exception as exc:  # a bug here must never stall the pipes: recording stops, they go on
            self._say(f"mcpframe tap: recording stopped ({type(exc).__name__}: {exc})")
        finally:
            self._done = True
            self._flush()
            with self._room:
                self._room.notify_all()

    def _sleep(self) -> None:
        """Wait until a forwarding thread has taken a chunk (it wakes us only when the flag is up)."""
        self._sleeping = True
        if not self._chunks:  # checked after the flag is up: a chunk taken meanwhile is not missed
            self._wake.get()
        self._sleeping = False

    def _record(self, direction: Direction, at: float, chunk: bytes | None) -> None:
        decoder = self._decoders[direction]
        if chunk is not None:
            items = decoder.feed(chunk)
            self._consumed += len(chunk)
        else:
            items = [] if decoder.closed else decoder.close()
        for item in items:
            record = self._describe(direction, item, at)
            if self._log is not None:
                self._write("log", self._log, json.dumps(record, ensure_ascii=False) + "\n")
            if self._pretty is not None:
                self._write("--pretty", self._pretty, pretty_line(record, self._colour) + "\n")

    def _write(self, what: str, stream: TextIO, text: str) -> None:
        try:
            stream.write(text)
        except (OSError, ValueError) as exc:  # a full disk, a closed stderr: stop writing there only
            if what == "log":
                self._log = None
            else:
                self._pretty = None
            self._say(f"mcpframe tap: cannot write the {what} any more ({exc}); the pipes go on")

    def _flush(self) -> None:
        for stream in (self._log, self._pretty):
            if stream is not None:
                try:
                    stream.flush()
                except (OSError, ValueError) as exc:
                    self._say(f"mcpframe tap: cannot write the log ({exc})")

    def _say(self, line: str) -> None:
        try:
            self._warn.write(line + "\n")
            self._warn.flush()
        except (OSError, ValueError):
            pass

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
