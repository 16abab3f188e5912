"""Helpers for the docs tests: run a program as a child, free ports, the repository's paths."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from mcpframe import core

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CHILD_TIMEOUT = 120.0
"""Seconds a whole child program may take (a bound against hangs, not a speed claim)."""


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child: this backend, the source tree importable, and `extra`."""
    env = dict(os.environ, MCPFRAME_BACKEND=core.BACKEND, **extra)
    # the test run may import mcpframe from the source tree rather than an installed copy (tests/conftest.py)
    python_dir = str(ROOT / "python")
    if python_dir not in env.get("PYTHONPATH", "").split(os.pathsep):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (python_dir, env.get("PYTHONPATH")) if p)
    return env


def run_program(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python args...` from the repository's root to its end; stdout and stderr captured."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env or child_env(),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_line(child: subprocess.Popen[str], marker: str, timeout: float = CHILD_TIMEOUT) -> str:
    """The first line of the child's stderr containing `marker`; fail with what it said if it ends first.

    A thread reads stderr (a blocking pipe), so a child that hangs fails the test after `timeout` seconds
    instead of hanging it; the rest of stderr keeps being drained so the child never blocks writing it.
    """
    assert child.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def pump(stream: IO[str]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, args=(child.stderr,), daemon=True).start()
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no {marker!r} from the child in {timeout} s:\n{''.join(seen)}") from None
        if line is None:
            status = child.wait()
            raise AssertionError(f"the child ended ({status}) before saying {marker!r}:\n{''.join(seen)}")
        seen.append(line)
        if marker in line:
            return line


def has_module(name: str) -> bool:
    """Whether `name` imports in this interpreter (optional extras)."""
    try:
        __import__(name)
    except ImportError:
        return False
    return True


__all__ = [
    "CHILD_TIMEOUT",
    "EXAMPLES",
    "ROOT",
    "child_env",
    "free_port",
    "has_module",
    "run_program",
    "wait_for_line",
]
