"""Helpers of the listen/remote proxy tests: run `mcpframe proxy` (or a server) as a child, find its URL."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests._process import stop_child

import mcpframe

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = str(ROOT / "examples" / "everything.py")
SERVE_EVERYTHING = [sys.executable, "-m", "mcpframe", "serve", EVERYTHING]
TS_ENTRY = (
    ROOT / ".cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
_URL = re.compile(r"Streamable HTTP on (\S+)")


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment, with this mcpframe tree first and the selected core backend kept."""
    package_root = str(Path(mcpframe.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ)
    env.update(PYTHONPATH=path, MCPFRAME_BACKEND=os.environ.get("MCPFRAME_BACKEND", "auto"), **extra)
    return env


@contextlib.contextmanager
def running(command: Sequence[str], *, timeout: float = 30.0, **env: str) -> Iterator[str]:
    """Run `command` (an `mcpframe proxy --listen` or `mcpframe serve --http`) and yield the URL it prints
    on stderr; its later stderr is drained (a full pipe would stall it); stopped with SIGTERM after."""
    child = subprocess.Popen(
        list(command), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env(**env)
    )
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            match = _URL.search(line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
            elif not found:
                found_lines.append(line)
        ready.set()

    found_lines: list[str] = []
    threading.Thread(target=read, daemon=True).start()
    try:
        ready.wait(timeout)
        if not found:
            raise RuntimeError(f"{command} printed no URL: {''.join(found_lines)[-2000:]}")
        yield found[0]
    finally:
        stop_child(child)


def listen_command(*upstream: str, flags: Sequence[str] = ()) -> list[str]:
    """`mcpframe proxy --listen http://127.0.0.1:0/mcp [flags] -- upstream...`."""
    proxy = [sys.executable, "-m", "mcpframe", "proxy", "--listen", "http://127.0.0.1:0/mcp", *flags]
    return [*proxy, "--", *upstream]
