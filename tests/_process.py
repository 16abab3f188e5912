"""Helpers for tests that run a server in a child process."""

from __future__ import annotations

import subprocess
from typing import Any


def stop_child(child: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """Ask ``child`` to end (SIGTERM), and kill it if it has not ended within ``grace`` seconds."""
    child.terminate()
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
