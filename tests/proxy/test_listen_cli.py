"""`mcpframe proxy --listen`'s arguments: the HTTP flags of `serve --http` make the proxy's `HttpOptions`."""

from __future__ import annotations

from typing import Any

import pytest

from mcpframe.cli.proxy import proxy_main
from mcpframe.http.options import HttpOptions
from mcpframe.proxy import ProxyOptions, listen


def _captured(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> ProxyOptions:
    seen: list[Any] = []
    monkeypatch.setattr(listen, "run_listen", lambda options: seen.append(options) or 0)
    assert proxy_main(argv) == 0
    (options,) = seen
    assert isinstance(options, ProxyOptions)
    return options


def test_http_flags_reach_the_listen_options(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["--listen", "http://127.0.0.1:9/api", "--allow-host", "proxy.example", "--no-legacy-sse"]
    argv += ["--idle-timeout", "42", "--pool-size", "3", "--retry-ms", "250", "--", "python", "server.py"]
    options = _captured(monkeypatch, argv)
    assert options.command == ("python", "server.py")
    assert options.idle_timeout == 42  # the proxy's own flag, not serve --http's
    assert options.pool_size == 3
    http = options.http
    assert isinstance(http, HttpOptions)
    assert http.path == "/api"
    assert list(http.allowed_hosts or ()) == ["proxy.example"]
    assert http.legacy_sse is False
    assert http.retry_ms == 250


def test_the_address_comes_from_the_url_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        proxy_main(["--listen", "http://127.0.0.1:9/mcp", "--port", "10", "--", "python", "server.py"])
    assert exited.value.code == 2
    assert "--port: give the host, port and path in the --listen URL" in capsys.readouterr().err


def test_a_listen_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="expected an http:// URL"):
        listen.listen_address("https://127.0.0.1/mcp")
    assert listen.listen_address("http://[::1]:8080/x") == listen.ListenAddress("::1", 8080, "/x")


def test_the_store_flags_are_left_out_of_the_proxy_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        proxy_main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "--listen" in out
    assert "--store" not in out  # refused at start: a proxy's sessions are its children, not shareable
