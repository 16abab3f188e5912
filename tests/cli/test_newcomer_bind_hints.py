"""An address `mcpframe serve --http` or `proxy --listen` cannot bind is one line that says what to do.

"[Errno 98] Address already in use" alone leaves a newcomer guessing (which process? which flag?). The line
now ends with the usual cause and the flag that changes it: another port (`--port 0` picks a free one), a
port from 1024 up without root, an address this machine has.
"""

from __future__ import annotations

import errno
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpframe.cli.http_flags import bind_hint
from mcpframe.cli.proxy import proxy_main
from mcpframe.cli.serve import serve_main

from .conftest import write_project

SERVER = """
    from mcpframe.server import Server

    server = Server("demo")
"""

NOT_HERE = "192.0.2.1"  # TEST-NET-1 (RFC 5737): no machine has it, so binding it is EADDRNOTAVAIL


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_project(tmp_path, {"server.py": SERVER})


@pytest.mark.usefixtures("project")
def test_serve_on_a_port_in_use_names_the_way_out(
    taken_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_main(["server.py", "--http", "--port", str(taken_port)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mcpframe serve: cannot listen on 127.0.0.1:{taken_port}: [Errno 98] ")
    assert err.endswith(
        "; another process listens there: stop it, or choose another port "
        "(--port N, or --port 0 for a free one)\n"
    )
    assert len(err.splitlines()) == 1


@pytest.mark.usefixtures("project")
def test_serve_on_an_address_not_here_names_the_host_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with (
        socket.socket() as probe
    ):  # where net.ipv4.ip_nonlocal_bind=1 it binds, and serve would serve forever
        try:
            probe.bind((NOT_HERE, 0))
        except OSError as exc:
            refused = exc.errno
        else:
            pytest.skip(f"this machine binds addresses it does not have ({NOT_HERE}: ip_nonlocal_bind)")
    assert refused == errno.EADDRNOTAVAIL
    assert serve_main(["server.py", "--http", "--host", NOT_HERE, "--port", "0"]) == 1
    last = capsys.readouterr().err.splitlines()[-1]  # after a warning about the Host allow-list
    assert last.startswith(f"mcpframe serve: cannot listen on {NOT_HERE}:0: ")
    assert last.endswith("; no interface of this machine has that address (--host 127.0.0.1)")


def test_proxy_listen_on_a_port_in_use_names_the_url(
    taken_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{taken_port}/mcp"
    assert proxy_main(["--listen", url, "--", sys.executable, "-c", "pass"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mcpframe proxy: cannot listen on {url}: ")
    assert err.endswith(
        "; another process listens there: stop it, or choose another port "
        "(another port in the --listen URL)\n"
    )
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("code", "port", "expected"),
    [
        (errno.EACCES, 80, "; ports below 1024 need root: choose a port from 1024 up (--port N)"),
        (errno.EACCES, 8080, ""),  # refused above 1024: the machine's policy, not the port's privilege
        (errno.EACCES, None, ""),
        (errno.ECONNRESET, 80, ""),  # not a reason to bind: no advice
    ],
)
def test_the_other_reasons(code: int, port: int | None, expected: str) -> None:
    assert bind_hint(OSError(code, "x"), port=port, port_flag="--port N", host_flag="--host H") == expected
