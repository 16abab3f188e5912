"""`--help` names the flag that turns HTTP on for each command: `--http` for serve, `--listen` for proxy.

The two commands share their HTTP flags; the proxy has no `--http`, and takes its host, port and path from
the `--listen` URL only, so its help must neither send a reader to `--http` nor offer those three.
"""

from __future__ import annotations

import re

import pytest

from mcpframe.cli import main


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_serve_help_groups_its_http_flags_under_http(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help("serve", capsys)
    assert "Streamable HTTP (with --http):" in text
    assert "OAuth bearer verification (with --http):" in text
    for flag in ("--host HOST", "--port PORT", "--path PATH"):
        assert flag in text


def test_proxy_help_groups_its_http_flags_under_listen(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help("proxy", capsys)
    assert "with --http" not in text
    assert "Streamable HTTP (with --listen):" in text
    assert "OAuth bearer verification (with --listen):" in text
    assert "--auth-token TOKEN" in text  # the shared flags are still listed
    for flag in ("--host", "--port", "--path"):  # the --listen URL gives these
        assert not re.search(rf"(?<![\w-]){flag}\b", text), flag
