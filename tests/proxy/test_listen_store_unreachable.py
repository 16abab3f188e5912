"""`mcpframe proxy --listen --store <unreachable>`: one line and status 1 before any URL (as `serve`)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator

import pytest

from mcpframe.cli.proxy import proxy_main


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port bound but not listening: a connection to it is refused, and nobody else takes it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_an_unreachable_store_is_one_line_before_any_url(
    refused_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("redis.asyncio")
    url = f"redis://user:s3cret@127.0.0.1:{refused_port}/0"
    child = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    status = proxy_main(["--listen", "http://127.0.0.1:0/mcp", "--store", url, "--", *child])
    captured = capsys.readouterr()
    assert status == 1
    (line,) = captured.err.splitlines()  # no traceback, no URL line
    said = f"mcpframe proxy: cannot reach the session store at redis://127.0.0.1:{refused_port}/0: "
    assert line.startswith(said)
    assert len(line) > len(said)  # and why
    assert "s3cret" not in captured.err
