"""`--store` that cannot work is one line and status 2 before anything listens, not a traceback after.

A wrong URL scheme, or the redis package missing, used to surface only once the server started: its URL
lines printed, then a traceback. The check runs where the other HTTP flags are checked.
"""

from __future__ import annotations

import sys

import pytest

from mcpframe.cli.proxy import proxy_main
from mcpframe.cli.serve import serve_main

pytest.importorskip("uvicorn")


@pytest.mark.parametrize(
    ("store", "without_redis", "expected"),
    [
        ("foo://x", False, "mcpframe serve: --store 'foo://x': expected redis://host:port/db"),
        ("redis://127.0.0.1:6379/0", True, "mcpframe serve: --store needs the redis extra ("),
    ],
)
def test_serve_refuses_a_store_it_cannot_open(
    store: str,
    without_redis: bool,
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if without_redis:
        monkeypatch.setitem(sys.modules, "redis.asyncio", None)  # as if the redis extra were not installed
    status = serve_main(["server.py", "--http", "--port", "0", "--store", store])
    err = capsys.readouterr().err
    assert status == 2
    (line,) = err.splitlines()
    assert line.startswith(expected), line
    if without_redis:
        assert "pip install" in line


def test_proxy_listen_refuses_a_store_it_cannot_open(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        proxy_main(["--listen", "http://127.0.0.1:9/mcp", "--store", "foo://x", "--", "python", "server.py"])
    assert exited.value.code == 2
    assert "--store 'foo://x': expected redis://host:port/db" in capsys.readouterr().err
