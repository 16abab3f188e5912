"""`--head-timeout SECONDS` (`serve --http`, `proxy --listen`) sets `HttpOptions.head_timeout`: how long a
request head may take to come in whole from its first byte before a 408."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from mcpframe.cli.http_flags import add_http_flags, http_options
from mcpframe.cli.proxy import proxy_main
from mcpframe.cli.serve import serve_main
from mcpframe.http.server import HttpOptions


def _options(*argv: str) -> Any:
    parser = argparse.ArgumentParser()
    add_http_flags(parser)
    return http_options(parser.parse_args(list(argv)))


def test_the_flag_sets_the_head_timeout_and_its_default_is_the_options() -> None:
    assert _options().head_timeout == HttpOptions().head_timeout
    assert _options("--head-timeout", "2.5").head_timeout == 2.5


@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_head_timeout_of_zero_or_less_is_refused_naming_the_flag(value: str) -> None:
    with pytest.raises(ValueError, match=r"^--head-timeout -?[0-9.]+ is out of range: expected more than 0"):
        _options("--head-timeout", value)


@pytest.mark.parametrize("main", [serve_main, proxy_main])
def test_help_shows_the_flag(
    main: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--head-timeout SECONDS" in capsys.readouterr().out
