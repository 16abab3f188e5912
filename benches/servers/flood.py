"""The flow-control benchmark's client side: floods a child server over its stdio pipes and tallies answers.

Unlike ``stdio_client.pipelined`` (at most a window of requests in flight, any wrong answer fatal), a flood
writes requests as fast as the server's stdin takes them, so the server's own flow control (or its lack)
is what decides how many are in flight; and answers are *counted*: a result with the right text, a refusal
(``-32603`` "Server busy"), any other error. Anything else (an id never asked, asked once and answered
twice, a wrong text) is still fatal. Requests are encoded in slices as they are needed, so a million of
them cost the client no more memory than a thousand.

A flood can hold off reading: the client then only writes until the server goes quiet (it stopped reading
its stdin, or it has read everything and is done with it), samples the server's memory, and reads again.
"""

from __future__ import annotations

import dataclasses
import os
import select
import time
from contextlib import suppress
from typing import Any

from servers.stdio_client import BenchError, Child

SLICE = 512  # requests encoded (and written) per slice
QUIET_CHECK = 0.1  # seconds between two looks at a server suspected of having stopped
QUIET_CPU = 0.002  # CPU seconds a quiet server may still use between two looks


def request_bytes(tool: str, first: int, count: int) -> bytes:
    """`count` NDJSON `tools/call` requests of `tool` with ids (and texts) `first`, `first + 1`, ..."""
    template = (
        '{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
        '"params":{"name":"%s","arguments":{"text":"echo %d"}}}\n'
    )
    return "".join(template % (i, tool, i) for i in range(first, first + count)).encode()


@dataclasses.dataclass
class Tally:
    """What came back for the ids `first .. first + count - 1`: each must be answered exactly once."""

    first: int
    count: int
    results: int = 0
    refused: int = 0
    errors: int = 0
    first_error: str = ""

    def __post_init__(self) -> None:
        self._seen = bytearray(self.count)

    @property
    def done(self) -> int:
        return self.results + self.refused + self.errors

    @property
    def clean(self) -> bool:
        """Every request answered with its result."""
        return self.results == self.count

    def check(self, messages: list[Any]) -> None:
        first, seen = self.first, self._seen
        for m in messages:
            index = m.id - first if type(m.id) is int else -1
            if m.kind not in ("result", "error") or not 0 <= index < len(seen) or seen[index]:
                raise BenchError(f"unexpected answer: {m!r} {getattr(m, 'error', None)!r}")
            seen[index] = 1
            if m.kind == "result":
                if m.result["content"][0]["text"] != f"echo {m.id}" or m.result.get("isError"):
                    raise BenchError(f"wrong echo for id {m.id}: {m.result!r}")
                self.results += 1
            elif m.error.get("code") == -32603 and "busy" in str(m.error.get("message", "")).lower():
                self.refused += 1
            else:
                self.errors += 1
                self.first_error = self.first_error or f"{m.error!r}"


@dataclasses.dataclass
class Memory:
    """The server's memory along a flood, in KiB (from ``/proc/PID/status``)."""

    start: int = 0
    peak: int = 0  # VmHWM: the highest RSS the process ever had
    held: int = 0  # VmRSS when the non-reading client resumed reading (0: it never held off)
    end: int = 0


@dataclasses.dataclass
class Flood:
    """One flood's outcome: the answers, wall and server CPU seconds, the server's memory."""

    tally: Tally
    seconds: float = 0.0
    cpu: float = 0.0
    memory: Memory = dataclasses.field(default_factory=Memory)
    written_when_held: int = 0  # requests the server had taken when the client resumed reading


def status_kib(child: Child) -> dict[str, int]:
    """The child's ``VmRSS`` and ``VmHWM`` in KiB."""
    fields: dict[str, int] = {}
    with open(f"/proc/{child.proc.pid}/status", "rb") as status:
        for line in status:
            if line.startswith((b"VmRSS:", b"VmHWM:")):
                fields[line[:5].decode()] = int(line.split()[1])
    return fields


def running_threads(child: Child) -> int:
    """How many of the child's threads are running or waiting for a core (state R)."""
    count = 0
    for task in os.listdir(f"/proc/{child.proc.pid}/task"):
        with suppress(OSError), open(f"/proc/{child.proc.pid}/task/{task}/stat", "rb") as stat:
            count += stat.read().rpartition(b")")[2].split()[0] == b"R"
    return count


class QuietWatch:
    """Says when the child has gone quiet: two looks in a row with no thread runnable and next to no CPU
    used since the previous look (the server waits on a pipe; a server starved of CPU shows as runnable)."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.cpu = child.cpu_seconds()
        self.calm = 0

    def look(self) -> bool:
        if self.child.proc.poll() is not None:
            raise self.child.died("exited while the client was not reading")
        cpu = self.child.cpu_seconds()
        calm = cpu - self.cpu < QUIET_CPU and running_threads(self.child) == 0
        self.cpu, self.calm = cpu, (self.calm + 1 if calm else 0)
        return self.calm >= 2


class _Writer:
    """The requests of one flood, encoded slice by slice as the pipe takes them."""

    def __init__(self, child: Child, tool: str, count: int) -> None:
        self.fd, self.tool = child.wfd, tool
        self.next, self.end = child.next_id, child.next_id + count
        self.out = memoryview(b"")

    @property
    def pending(self) -> bool:
        return bool(self.out) or self.next < self.end

    @property
    def taken(self) -> int:
        """Requests written whole so far (each ends with the newline)."""
        return self.next - self.out.tobytes().count(b"\n")

    def write(self) -> None:
        """Write what the pipe takes now."""
        if not self.out and self.next < self.end:
            n = min(SLICE, self.end - self.next)
            self.out, self.next = memoryview(request_bytes(self.tool, self.next, n)), self.next + n
        with suppress(BlockingIOError):
            self.out = self.out[os.write(self.fd, self.out) :]


def flood(child: Child, tool: str, count: int, *, hold: bool = False) -> Flood:
    """Send `count` calls of `tool` as fast as the server reads them; every answer read and tallied.

    With `hold`, the client reads nothing until the server has gone quiet (see ``QuietWatch``), then
    records the server's memory and reads (and writes the rest) to the end."""
    result = Flood(Tally(child.next_id, count))
    writer = _Writer(child, tool, count)
    child.next_id += count
    reading, watch = not hold, QuietWatch(child) if hold else None
    result.memory.start = status_kib(child)["VmRSS"]
    os.set_blocking(child.wfd, False)
    cpu, start = child.cpu_seconds(), time.perf_counter()
    try:
        while result.tally.done < count:
            readable, writable, _ = select.select(
                [child.rfd] if reading else [],
                [child.wfd] if writer.pending else [],
                [],
                None if reading else QUIET_CHECK,
            )
            if writable:
                writer.write()
            if readable:
                data = os.read(child.rfd, 1 << 20)
                if not data:
                    raise child.died("stdout closed")
                result.tally.check(child.decoder.feed(data))
            if watch is not None and not writable and watch.look():
                reading, watch = True, None
                result.memory.held = status_kib(child)["VmRSS"]
                result.written_when_held = writer.taken - result.tally.first
        result.seconds = time.perf_counter() - start
        result.cpu = child.cpu_seconds() - cpu
    finally:
        os.set_blocking(child.wfd, True)
    memory = status_kib(child)
    result.memory.peak, result.memory.end = memory["VmHWM"], memory["VmRSS"]
    return result


def bursts(child: Child, tool: str, size: int, count: int) -> Flood:
    """`count` floods of `size` calls one after the other (at most `size` in flight), as one ``Flood``: the
    answers, seconds and CPU summed (a burst is too short to time alone on a busy machine)."""
    runs = [flood(child, tool, size) for _ in range(count)]
    tally = Tally(runs[0].tally.first, size * count)
    tally.results, tally.refused, tally.errors = (
        sum(getattr(run.tally, k) for run in runs) for k in ("results", "refused", "errors")
    )
    tally.first_error = next((run.tally.first_error for run in runs if run.tally.first_error), "")
    seconds, cpu = sum(run.seconds for run in runs), sum(run.cpu for run in runs)
    return Flood(tally, seconds, cpu, runs[-1].memory)
