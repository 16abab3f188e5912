"""`mcpframe probe URL` with nothing listening names the URL it could not reach in its one line."""

from __future__ import annotations

import socket

import pytest

from mcpframe.cli.probe import probe_main


def test_connection_refused_names_the_url(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("httpx")
    with socket.socket() as sock:  # a port that was free a moment ago, now closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    assert probe_main(["--timeout", "30", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mcpframe probe: connection refused: {url} ("), err
    assert err.count("\n") == 1
