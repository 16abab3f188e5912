"""`mcpframe probe URL --header ...`, as its own help writes it: flags after the URL are flags.

They used to be taken for a command (`cannot run 'http://...'`). Nothing listens at the URLs here: the
one-line reason (`connection refused`) shows the URL was probed as a URL, with the flags applied.
"""

from __future__ import annotations

import socket
import sys

import pytest

from mcpframe.cli.probe import probe_main

pytest.importorskip("httpx")


@pytest.fixture
def closed_url() -> str:
    with socket.socket() as sock:  # a port that was free a moment ago, now closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def test_flags_after_the_url_are_flags(closed_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert probe_main([closed_url, "--header", "Authorization: Bearer t", "--timeout", "30"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mcpframe probe: connection refused"), err


def test_a_bad_header_after_the_url_is_refused_as_a_header(
    closed_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert probe_main([closed_url, "--header", "nocolon"]) == 2
    assert capsys.readouterr().err == "mcpframe probe: --header wants NAME:VALUE, got 'nocolon'\n"


def test_flags_before_and_after_the_url_add_up(closed_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert probe_main(["--header", "A: 1", closed_url, "--header", "nocolon", "--json"]) == 2
    assert "got 'nocolon'" in capsys.readouterr().err


def test_words_after_the_url_are_refused(closed_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        probe_main([closed_url, "extra"])
    assert exited.value.code == 2
    assert "after the URL only flags, got 'extra' (a command goes after '--')" in capsys.readouterr().err


def test_a_command_keeps_its_own_flags(capsys: pytest.CaptureFixture[str]) -> None:
    # after `--`, `--header` belongs to the command: the child runs and exits at once
    status = probe_main(["--json", "--", sys.executable, "-c", "import sys; sys.exit(3)", "--header", "x"])
    assert status == 1
    err = capsys.readouterr().err
    assert err == "mcpframe probe: the server exited (status 3) during handshake\n"
