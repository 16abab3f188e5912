"""`python server.py` (`server.run()`) typed at a shell prompt says what it waits for, as `mcpframe serve`.

The hint is one line on stderr, only when stdin is a terminal (an MCP client starts the server with pipes).
Each server's lifespan writes "started" on stderr once it runs, after any hint: the lines are read up to
that marker, so no assertion waits for something not to happen.
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
    import sys
    from contextlib import asynccontextmanager

    from mcpframe.server import Server


    @asynccontextmanager
    async def lifespan(server):
        print("started", file=sys.stderr, flush=True)
        yield


    server = Server("demo", lifespan=lifespan)
    if __name__ == "__main__":
        server.run(hint=sys.argv[1:] != ["--quiet"])
"""

RUN_HINT = (
    "mcpframe: server 'demo' speaks MCP on stdin/stdout, for an MCP client that starts this program "
    "(docs/running.md); nothing to type here. Ctrl-C stops it.\n"
)
SERVE_HINT = (
    "mcpframe serve: server.py:server speaks MCP on stdin/stdout, for an MCP client that starts this command "
    "(docs/running.md); nothing to type here. Ctrl-C stops it; --http serves it over HTTP.\n"
)


def _lines_until_started(stream: int, deadline: float) -> list[str]:
    """Read `stream` up to the lifespan's "started" line (the deadline guards against a hang only)."""
    data = b""
    while not (data == b"started\n" or data.endswith(b"\nstarted\n")):
        ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no 'started' line on stderr, only {data!r}"
        chunk = os.read(stream, 4096)
        assert chunk, f"stderr ended after {data!r}"
        data += chunk
    return data.decode().splitlines(keepends=True)


def _stderr_at_a_terminal(project: Path, command: list[str]) -> list[str]:
    import pty  # noqa: PLC0415 - POSIX only

    controller, terminal = pty.openpty()
    child = subprocess.Popen(
        command, cwd=project, env=child_env(), stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    os.close(terminal)
    try:
        assert child.stderr is not None
        return _lines_until_started(child.stderr.fileno(), time.monotonic() + 60)
    finally:
        child.terminate()
        child.wait(timeout=60)
        os.close(controller)


def test_server_run_at_a_terminal_says_what_it_waits_for(tmp_path: Path) -> None:
    write_project(tmp_path, {"server.py": SERVER})
    assert _stderr_at_a_terminal(tmp_path, [sys.executable, "server.py"]) == [RUN_HINT, "started\n"]


def test_hint_false_keeps_the_line_back(tmp_path: Path) -> None:
    write_project(tmp_path, {"server.py": SERVER})
    assert _stderr_at_a_terminal(tmp_path, [sys.executable, "server.py", "--quiet"]) == ["started\n"]


def test_mcpframe_serve_hints_once(tmp_path: Path) -> None:
    write_project(tmp_path, {"server.py": SERVER})
    assert _stderr_at_a_terminal(tmp_path, [*SERVE, "server.py"]) == [SERVE_HINT, "started\n"]


def test_server_run_started_with_pipes_says_nothing(tmp_path: Path) -> None:
    write_project(tmp_path, {"server.py": SERVER})
    done = subprocess.run(
        [sys.executable, "server.py"],
        cwd=tmp_path,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stderr == b"started\n"
    assert done.stdout == b""
