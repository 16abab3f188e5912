"""The benchmark's client: spawns a server script of this folder on two raw pipes and drives it.

Written for speed so that it is not what is measured: every request encoded before the clock starts, the
answers decoded by mcpframe's core `Decoder` in large reads, one thread driving both pipe ends with
`select`, each answer checked (a result, an id asked and not yet answered, `content[0].text` == argument).
"""

from __future__ import annotations

import dataclasses
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NamedTuple

import mcpframe
from mcpframe import core

SERVERS_DIR = Path(__file__).resolve().parent
PROTOCOL = "2025-11-25"
READ = 1 << 20
PROFILE: dict[str, Path] = {}  # server key -> cProfile output of its child (`--profile DIR`)


@dataclasses.dataclass(frozen=True)
class ServerKind:
    """One contender: which script runs, with which core backend, and whether its counts are capped."""

    key: str
    script: str
    backend: str | None = None
    capped: bool = False


class BenchError(AssertionError):
    """A server answered wrongly, or died."""


# ---------------------------------------------------------------------------------------------- the child


class Child:
    """A server child process on two pipes, with the client side's decoder."""

    def __init__(self, kind: ServerKind) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(mcpframe.__file__).resolve().parent.parent)}
        env.pop("MCPFRAME_BACKEND", None)
        if kind.backend is not None:
            env["MCPFRAME_BACKEND"] = kind.backend
        self.kind = kind
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        profile = ["-m", "cProfile", "-o", str(PROFILE[kind.key])] if kind.key in PROFILE else []
        self.proc = subprocess.Popen(
            [sys.executable, *profile, str(SERVERS_DIR / kind.script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            bufsize=0,
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.decoder = core.Decoder()
        self.next_id = 1

    def rss_kib(self) -> int:
        """The child's resident set size in KiB."""
        with open(f"/proc/{self.proc.pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
        raise BenchError("no VmRSS in /proc status")

    def cpu_seconds(self) -> float:
        """CPU time the child's live threads have used so far (scheduler nanoseconds, all threads)."""
        total = 0
        for task in os.listdir(f"/proc/{self.proc.pid}/task"):
            with suppress(OSError), open(f"/proc/{self.proc.pid}/task/{task}/schedstat", "rb") as stat:
                total += int(stat.read().split()[0])
        return total / 1e9

    def died(self, what: str) -> BenchError:
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode(errors="replace")
        return BenchError(f"{self.kind.key}: {what} (exit {self.proc.poll()}); stderr tail:\n{tail}")

    def read_messages(self) -> list[Any]:
        """Block until at least one whole frame arrived; return what it decoded to."""
        while True:
            data = os.read(self.rfd, READ)
            if not data:
                raise self.died("stdout closed")
            if out := self.decoder.feed(data):
                return out

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """One request, its answer's result (blocking; for the handshake)."""
        rid = self.next_id
        self.next_id += 1
        os.write(self.wfd, core.encode_request(rid, method, params))
        messages = self.read_messages()
        if len(messages) != 1 or messages[0].kind != "result" or messages[0].id != rid:
            raise self.died(f"{method}: unexpected answer {messages!r}")
        return messages[0].result

    def handshake(self) -> None:
        """`initialize`, check it, `notifications/initialized`."""
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "bench-client", "version": "1.0.0"},
        }
        result = self.call("initialize", params)
        if result.get("protocolVersion") != PROTOCOL or "tools" not in result.get("capabilities", {}):
            raise self.died(f"initialize answered {result!r}")
        os.write(self.wfd, core.encode_notification("notifications/initialized"))

    def close(self) -> None:
        # Close stdin through its file object, once: an os.close of its fd left the object to close the same
        # number again when collected (EBADF, or another file's fd if the number was reused meanwhile).
        stdin, self.proc.stdin = self.proc.stdin, None
        if stdin is not None:
            with suppress(OSError):
                stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()


@contextmanager
def running(kind: ServerKind) -> Iterator[Child]:
    """A started, initialized child of `kind`."""
    child = Child(kind)
    try:
        child.handshake()
        yield child
    finally:
        child.close()


# ---------------------------------------------------------------------------------------------- the load


def requests(first: int, count: int) -> list[bytes]:
    """`count` encoded `tools/call echo` requests with ids `first`, `first + 1`, ..."""
    return [
        core.encode_request(i, "tools/call", {"name": "echo", "arguments": {"text": f"echo {i}"}})
        for i in range(first, first + count)
    ]


class Checker:
    """Checks answers against the ids `first .. first + count - 1`, each answered exactly once."""

    def __init__(self, first: int, count: int) -> None:
        self.first = first
        self.seen = bytearray(count)
        self.done = 0

    def check(self, messages: list[Any]) -> None:
        first, seen = self.first, self.seen
        for m in messages:
            index = m.id - first if type(m.id) is int else -1
            if m.kind != "result" or not 0 <= index < len(seen) or seen[index]:
                raise BenchError(f"unexpected answer: {m!r} {getattr(m, 'error', None)!r}")
            seen[index] = 1
            if m.result["content"][0]["text"] != f"echo {m.id}" or m.result.get("isError"):
                raise BenchError(f"wrong echo for id {m.id}: {m.result!r}")
        self.done += len(messages)


def _fill(frames: list[bytes], sent: int, limit: int, batch: int) -> tuple[memoryview, int]:
    end = min(limit, sent + batch)
    return memoryview(b"".join(frames[sent:end])), end


class Timing(NamedTuple):
    """A timed run: wall seconds until the last answer, and the CPU seconds the server spent meanwhile."""

    seconds: float
    cpu: float


def pipelined(child: Child, count: int, window: int, samples: list[int] | None = None) -> Timing:
    """Send `count` requests keeping at most `window` in flight; time until the last answer.

    The server's CPU time is steadier than wall time on a shared machine. With `samples`, the child's RSS
    (KiB) is appended up to 20 times along the way."""
    frames = requests(child.next_id, count)
    checker = Checker(child.next_id, count)
    child.next_id += count
    window = window or count
    every = max(1, count // 20)
    next_sample = every
    out, sent = memoryview(b""), 0
    os.set_blocking(child.wfd, False)
    cpu = child.cpu_seconds()
    start = time.perf_counter()
    try:
        while checker.done < count:
            if not out and sent < count and sent - checker.done < window:
                out, sent = _fill(frames, sent, min(count, checker.done + window), 256)
            readable, writable, _ = select.select([child.rfd], [child.wfd] if out else [], [])
            if writable:
                with suppress(BlockingIOError):
                    out = out[os.write(child.wfd, out) :]
            if readable:
                data = os.read(child.rfd, READ)
                if not data:
                    raise child.died("stdout closed")
                checker.check(child.decoder.feed(data))
                if samples is not None and checker.done >= next_sample:
                    samples.append(child.rss_kib())
                    next_sample = (checker.done // every + 1) * every
        seconds = time.perf_counter() - start
        return Timing(seconds, child.cpu_seconds() - cpu)
    finally:
        os.set_blocking(child.wfd, True)


def sequential(child: Child, count: int) -> list[float]:
    """`count` requests one at a time; each one's round trip in seconds."""
    frames = requests(child.next_id, count)
    checker = Checker(child.next_id, count)
    child.next_id += count
    latencies = []
    clock = time.perf_counter
    for frame in frames:
        start = clock()
        os.write(child.wfd, frame)
        answer = child.read_messages()
        latencies.append(clock() - start)
        checker.check(answer)
    return latencies
