"""`mcpframe serve server.py` typed at a shell prompt says what it waits for; started by a client, nothing.

A stdio server waits for JSON-RPC on stdin without a word, which at a terminal looks like a hang. On a
terminal (never the case for an MCP client, which starts it with pipes) one line on stderr says so.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import SERVE, child_env, write_project

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")

SERVER = """
    from mcpframe.server import Server

    server = Server("demo")
"""

HINT = (
    "mcpframe serve: server.py:server speaks MCP on stdin/stdout, for an MCP client that starts this command "
    "(docs/running.md); nothing to type here. Ctrl-C stops it; --http serves it over HTTP.\n"
)


def _first_line(stream: int, deadline: float) -> bytes:
    """Read `stream` up to its first newline (a guard against a hang, not a timing assertion)."""
    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no line on stderr, only {data!r}"
        chunk = os.read(stream, 4096)
        assert chunk, f"stderr ended after {data!r}"
        data += chunk
    return data


def test_at_a_terminal_the_server_says_what_it_waits_for(tmp_path: Path) -> None:
    import pty  # noqa: PLC0415 - POSIX only

    write_project(tmp_path, {"server.py": SERVER})
    controller, terminal = pty.openpty()
    child = subprocess.Popen(
        [*SERVE, "server.py"],
        cwd=tmp_path,
        env=child_env(),
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(terminal)
    try:
        assert child.stderr is not None
        line = _first_line(child.stderr.fileno(), time.monotonic() + 60)
        assert line.decode() == HINT
    finally:
        child.terminate()
        child.wait(timeout=60)
        os.close(controller)


def test_started_with_pipes_it_says_nothing(tmp_path: Path) -> None:
    write_project(tmp_path, {"server.py": SERVER})
    done = subprocess.run(
        [*SERVE, "server.py"],
        cwd=tmp_path,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stderr == b""
    assert done.stdout == b""
