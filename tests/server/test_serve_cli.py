"""`mcpframe serve`: target loading and the options it refuses."""

from __future__ import annotations

import pytest
from examples.everything import server as everything

from mcpframe.cli.serve import load_server, serve_main
from mcpframe.server import Server


def make() -> Server:
    return Server("made")


not_a_server = 42


def test_load_server_by_module_and_attribute() -> None:
    assert load_server("examples.everything:server") is everything
    assert load_server("examples.everything") is everything
    assert load_server(f"{__name__}:make").name == "made"


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        (f"{__name__}:not_a_server", "is a int, not an mcpframe Server"),
        (f"{__name__}:missing", "has no attribute 'missing'"),
        ("no_such_module_xyz:server", "No module named"),
        (":server", "expected module:attr"),
    ],
)
def test_bad_targets_exit_2_with_a_reason(
    target: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_main([target]) == 2
    assert needle in capsys.readouterr().err


def test_stdio_and_http_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # `--http` itself is served (tests/conformance runs it); asking for both transports is an error
    assert serve_main(["examples.everything:server", "--http", "--stdio"]) == 2
    assert "choose one of --stdio and --http" in capsys.readouterr().err
