"""`mcpframe serve` that cannot start serving: one line on stderr, exit status 1, no traceback unless asked.

A `--store` that does not answer used to print the URL lines, then uvicorn's traceback and exit status 3;
it is now said before any URL. A lifespan failing at start-up is worded the same on stdio and over HTTP
(as `Server.run()` words it), with the same status, and `--traceback` adds its traceback on both.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpframe.cli.serve import serve_main

from .conftest import SERVE, child_env, write_project

pytest.importorskip("uvicorn")

APP = """
    from mcpframe.server import Server

    server = Server("demo")


    @server.tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b
"""

FAILING = """
    from contextlib import asynccontextmanager

    from mcpframe.server import Server


    @asynccontextmanager
    async def lifespan(server):
        raise RuntimeError("database unreachable")
        yield


    server = Server("demo", lifespan=lifespan)
"""


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port bound but not listening: a connection to it is refused, and nobody else takes it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.mark.parametrize("password", [False, True])
def test_an_unreachable_store_is_one_line_before_any_url(
    in_project: Path, refused_port: int, password: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("redis.asyncio")
    write_project(in_project, {"app.py": APP})
    auth = "user:s3cret@" if password else ""
    url = f"redis://{auth}127.0.0.1:{refused_port}/0"
    status = serve_main(["app.py:server", "--http", "--port", "0", "--store", url])
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    said = f"mcpframe serve: cannot reach the session store at redis://127.0.0.1:{refused_port}/0: "
    assert line.startswith(said)
    assert len(line) > len(said)  # and why
    assert "s3cret" not in line


def test_an_unreachable_store_with_traceback_shows_why(
    in_project: Path, refused_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("redis.asyncio")
    write_project(in_project, {"app.py": APP})
    url = f"redis://127.0.0.1:{refused_port}/0"
    status = serve_main(["app.py:server", "--http", "--port", "0", "--store", url, "--traceback"])
    err = capsys.readouterr().err
    assert status == 1
    assert "Traceback (most recent call last)" in err
    assert "Streamable HTTP on" not in err
    assert err.splitlines()[-1].startswith("mcpframe serve: cannot reach the session store at ")


@pytest.mark.parametrize("traceback", [False, True])
@pytest.mark.parametrize("transport", ["--stdio", "--http"])
def test_a_failing_lifespan_is_worded_alike_on_stdio_and_http(
    tmp_path: Path, transport: str, traceback: bool
) -> None:
    project = write_project(tmp_path, {"server.py": FAILING})
    flags = [transport, *(["--port", "0"] if transport == "--http" else [])]
    flags += ["--traceback"] if traceback else []
    done = subprocess.run(
        [*SERVE, "server.py", *flags],
        cwd=project,
        env=child_env(),
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == b""
    lines = [line for line in done.stderr.decode().splitlines() if line.strip()]
    # the line number in the written (dedented) file: FAILING starts with a blank line, so no + 1
    where = FAILING.splitlines().index('        raise RuntimeError("database unreachable")')
    assert lines[-1].startswith("mcpframe: server 'demo': its lifespan failed at start-up: ")
    assert lines[-1].endswith(f"server.py:{where}: RuntimeError: database unreachable")
    assert ("Traceback (most recent call last)" in done.stderr.decode()) is traceback
    assert not any("Streamable HTTP on" in line for line in lines)
    if not traceback:
        assert len(lines) == 1, lines
