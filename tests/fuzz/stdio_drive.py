"""Drive a JSON-RPC server over stdio with hostile frames, a valid request after each; check every answer.

Used by ``tests/fuzz/hostile.py`` (the command line) and ``tests/fuzz/test_hostile_fuzz.py`` (CI's short run).
The server under test is any command that speaks MCP on stdin/stdout with the quickstart's ``add`` tool:
``mcpframe serve examples/quickstart_server.py`` or ``mcpframe proxy URL`` in front of it.
"""

from __future__ import annotations

import json
import queue
import random
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.fuzz.mutations import hostile_frame, split_framing

INIT = (
    b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)


@dataclass
class Report:
    """What one run saw: inputs sent, errors answered (by code and message), and findings."""

    surface: str
    seed: int
    steps: int = 0
    seconds: float = 0.0
    errors: Counter[str] = field(default_factory=Counter)
    findings: list[str] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)

    def summary(self) -> str:
        top = ", ".join(f"{n}x {what}" for what, n in self.errors.most_common(40))
        lines = [
            f"{self.surface}: seed {self.seed}, {self.steps} hostile inputs in {self.seconds:.0f} s, "
            f"RSS KiB {self.rss_kib}, {len(self.findings)} findings",
            f"  errors answered: {top}",
        ]
        lines += [f"  FINDING {finding}" for finding in self.findings[:20]]
        return "\n".join(lines)


def rss_kib(pid: int) -> int:
    """The resident set of ``pid`` (and nothing of its children), in KiB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Lines:
    """The child's stdout, line by line, on a thread (so a huge write by us never deadlocks its answers)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.queue: queue.Queue[bytes | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.queue.put(line)
        self.queue.put(None)

    def next(self, timeout: float) -> bytes | None:
        """The next line; ``None`` at end of output. ``queue.Empty`` when none came within ``timeout``."""
        return self.queue.get(timeout=timeout)


def check_error(message: dict[str, Any], report: Report, step: int) -> None:
    """An error response must say what: an int code and a non-empty message."""
    error = message["error"]
    if not isinstance(error, dict) or not isinstance(error.get("code"), int) or not error.get("message"):
        report.findings.append(f"step {step}: unclear error {str(message)[:200]}")
        return
    report.errors[f"{error['code']} {str(error['message'])[:60]}"] += 1


def await_answer(lines: Lines, want: str, report: Report, step: int, timeout: float) -> dict[str, Any] | None:
    """Read the child's messages until the answer to ``want``, checking each; ``None`` if it never came."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            raw = lines.next(max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            report.findings.append(
                f"step {step}: no answer to {want} within {timeout} s (hang or lost message)"
            )
            return None
        if raw is None:
            report.findings.append(f"step {step}: the child closed its output before answering {want}")
            return None
        try:
            message = json.loads(raw)
        except ValueError:
            report.findings.append(f"step {step}: not JSON on stdout: {raw[:200]!r}")
            continue
        items = message if isinstance(message, list) else [message]
        for item in items:
            if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
                report.findings.append(f"step {step}: not a JSON-RPC message: {str(item)[:200]}")
                continue
            if "error" in item:
                check_error(item, report, step)
            rid = item.get("id")
            if isinstance(rid, str) and rid.startswith("ok-") and rid != want:
                report.findings.append(
                    f"step {step}: answer to {rid} while waiting for {want} (reordered/duplicate)"
                )
            if rid == want:
                return item


def valid_call(n: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":"ok-%d","method":"tools/call","params":{"name":"add","arguments":{"a":%d,"b":1}}}\n'
        % (n, n)
    )


def drive_stdio(
    command: list[str],
    *,
    surface: str,
    seed: int,
    seconds: float,
    max_steps: int = 10**9,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stderr_log: Path | None = None,
    answer_timeout: float = 60.0,
) -> Report:
    """Run ``command``; throw hostile frames at it for ``seconds`` (or ``max_steps``), seeded by ``seed``."""
    report = Report(surface, seed)
    rng = random.Random(seed)
    log = open(stderr_log, "wb") if stderr_log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    child = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=cwd
    )
    assert child.stdin is not None
    assert child.stdout is not None
    lines = Lines(child.stdout)
    start = time.monotonic()
    try:
        child.stdin.write(INIT)
        child.stdin.flush()
        if await_answer(lines, "init", report, 0, answer_timeout) is None:
            return report
        report.rss_kib.append(rss_kib(child.pid))
        step = 0
        while time.monotonic() - start < seconds and step < max_steps:
            step += 1
            report.steps = step
            if step % 5000 == 0:
                report.rss_kib.append(rss_kib(child.pid))
            frame = hostile_frame(rng)
            child.stdin.write(split_framing(rng, frame) + valid_call(step))
            child.stdin.flush()
            answer = await_answer(lines, f"ok-{step}", report, step, answer_timeout)
            if answer is None:
                report.findings.append(f"step {step}: after hostile frame {frame[:300]!r}")
                break
            text = (answer.get("result") or {}).get("content", [{}])[0].get("text")
            if text != str(step + 1):
                report.findings.append(f"step {step}: wrong answer {str(answer)[:200]} after {frame[:200]!r}")
            if child.poll() is not None:
                report.findings.append(
                    f"step {step}: the child exited ({child.returncode}) after {frame[:200]!r}"
                )
                break
        report.steps = step
        report.rss_kib.append(rss_kib(child.pid))
    except BrokenPipeError:
        report.findings.append(f"step {report.steps}: the child closed its input (exit {child.poll()})")
    finally:
        report.seconds = time.monotonic() - start
        child.kill()
        child.wait()
        if stderr_log:
            log.close()  # type: ignore[union-attr]
    return report
