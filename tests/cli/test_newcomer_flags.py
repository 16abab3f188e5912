"""A newcomer's slips on the command line get one line saying what to type, never silence or a traceback.

`mcpframe serve app.py --port 8000` (no `--http`) used to serve stdio and wait without a word; `mcpframe
proxy python server.py` (no `--`) said `unrecognized arguments: server.py`; `--listen 127.0.0.1:8080`
complained about a path; a `--listen` port in use ended in a traceback. Everything here is refused before
anything is served, so it runs in-process.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpframe.cli.proxy import proxy_main
from mcpframe.cli.serve import serve_main
from mcpframe.proxy import listen

from .conftest import write_project

SERVER = """
    from mcpframe.server import Server

    server = Server("demo")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path, {"server.py": SERVER})


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--port", "8000"], "--port"),  # its default, given: still a slip
        (["--port=8001"], "--port"),
        (["--po", "8001"], "--port"),  # an abbreviation argparse accepts
        (["--host", "0.0.0.0"], "--host"),
        (["--allowed-host", "mcp.example"], "--allow-host"),
        (["--no-legacy-sse"], "--[no-]legacy-sse"),
        (["--stateless"], "--stateless"),
        (["--stdio", "--max-sessions", "5"], "--max-sessions"),
        (["--transport", "stdio", "--path", "/x"], "--path"),
    ],
)
def test_serve_refuses_an_http_flag_without_http(
    project: Path, flags: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_main([str(project / "server.py"), *flags]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"mcpframe serve: {named} is for Streamable HTTP: add --http "
        "(without it the server speaks MCP on stdin/stdout)\n"
    )


def test_serve_still_names_the_auth_flags_in_their_own_words(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_main([str(project / "server.py"), "--port", "1", "--auth-token", "t"]) == 2
    assert "--auth-token protects HTTP: add --http" in capsys.readouterr().err


def test_serve_with_http_takes_the_same_flags(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpframe.cli import serve  # noqa: PLC0415 - its module, to stand in for serving

    seen: list[Any] = []
    monkeypatch.setattr(serve, "_serve_http", lambda server, args, options: seen.append((args, options)) or 0)
    assert serve_main([str(project / "server.py"), "--http", "--po", "8001", "--no-legacy-sse"]) == 0
    [(args, options)] = seen
    assert args.port == 8001
    assert args.host == "127.0.0.1"  # the defaults of the flags not given are filled in
    assert args.max_sessions == 10_000
    assert options.legacy_sse is False


def test_serve_still_refuses_an_unknown_flag(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        serve_main([str(project / "server.py"), "--htp"])
    assert exited.value.code == 2
    assert "mcpframe serve: error: unrecognized arguments: --htp" in capsys.readouterr().err


def _proxy_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        proxy_main(argv)
    assert exited.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["python", "server.py"],
            "'python' is not a URL; to run a server, put its command after '--': "
            "mcpframe proxy -- python server.py",
        ),
        (
            ["uvx", "--from", "x"],
            "unrecognized arguments: --from; a server's command goes after '--'",
        ),
        (
            ["localhost:8000/mcp"],
            "'localhost:8000/mcp' is not a URL: did you mean http://localhost:8000/mcp ?",
        ),
        (["--listn", "x", "--", "python", "server.py"], "unrecognized arguments: --listn"),
        (["https://host/mcp", "extra"], "unrecognized arguments: extra; a server's command goes after '--'"),
        (
            ["--listen", "127.0.0.1:8080", "--", "python", "server.py"],
            "--listen '127.0.0.1:8080': expected a URL such as http://127.0.0.1:8080/mcp",
        ),
        (
            ["--port=9", "--listen", "http://127.0.0.1:8080/mcp", "--", "python", "server.py"],
            "--port: give the host, port and path in the --listen URL",
        ),
        (
            ["--auth-token", "t", "--", "python", "server.py"],
            "--auth-token is for --listen URL (serving HTTP clients); without --listen it does nothing",
        ),
        (
            ["https://host/mcp", "--auth-token", "t"],
            "--auth-token is for --listen URL (serving HTTP clients); without --listen it does nothing; "
            "to send a token to the remote server: --header 'Authorization: Bearer TOKEN'",
        ),
        (
            ["--config", "servers.json", "--stateless"],
            "--stateless is for --listen URL (serving HTTP clients); without --listen it does nothing",
        ),
    ],
)
def test_proxy_says_what_to_type(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _proxy_error(argv, capsys) == f"mcpframe proxy: error: {expected}"


def test_the_proxy_keeps_its_own_idle_timeout_without_listen(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpframe.proxy import stdio  # noqa: PLC0415 - the mode's module, to stand in for running it

    seen: list[Any] = []
    monkeypatch.setattr(stdio, "run_stdio", lambda options: seen.append(options) or 0)
    assert proxy_main(["--idle-timeout", "5", "--", "python", "server.py"]) == 0
    [options] = seen
    assert options.idle_timeout == 5
    assert options.http is None


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def test_a_listen_port_in_use_is_one_line(taken_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{taken_port}/mcp"
    assert proxy_main(["--listen", url, "--", sys.executable, "-c", "pass"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mcpframe proxy: cannot listen on {url}: ")
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_other_failures_of_listen_are_not_worded_as_a_port(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(options: object) -> int:
        raise PermissionError(1, "Operation not permitted")  # EPERM: not a bind failure

    monkeypatch.setattr(listen, "run_listen", broken)
    with pytest.raises(PermissionError):
        proxy_main(["--listen", "http://127.0.0.1:9/mcp", "--", "python", "server.py"])
