"""Choosing a store: the option's checks and the CLI flags (no Redis needed)."""

from __future__ import annotations

import argparse

import pytest

from mcpframe.cli.http_flags import add_http_flags, http_options
from mcpframe.http.options import HttpOptions
from mcpframe.http.store import open_store


def test_a_store_url_must_name_redis() -> None:
    with pytest.raises(ValueError, match="unsupported URL scheme 'http'"):
        open_store("http://127.0.0.1:6379", idle_timeout=None, timeout=1.0)


def test_stateless_and_a_store_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="stateless and store exclude each other"):
        HttpOptions(stateless=True, store="redis://127.0.0.1:6379/0")
    with pytest.raises(ValueError, match="store_timeout must be more than 0"):
        HttpOptions(store_timeout=0)


def test_the_flags_make_the_options() -> None:
    parser = argparse.ArgumentParser()
    add_http_flags(parser)
    args = parser.parse_args(["--store", "redis://h:1/2", "--store-timeout", "0.5", "--idle-timeout", "60"])
    options = http_options(args)
    assert (options.store, options.store_timeout, options.stateless) == ("redis://h:1/2", 0.5, False)
    assert http_options(parser.parse_args(["--stateless"])).stateless
    with pytest.raises(ValueError, match=r"--store-timeout 0\.0 is out of range"):
        http_options(parser.parse_args(["--store-timeout", "0"]))


def test_the_liveness_outlives_a_slow_refresh() -> None:
    with pytest.raises(ValueError, match=r"store_liveness must be at least 3 times store_timeout \(6\)"):
        HttpOptions(store_liveness=5)  # with the default store_timeout of 2 s
    parser = argparse.ArgumentParser()
    add_http_flags(parser)
    args = parser.parse_args(["--store-liveness", "3", "--store-timeout", "1"])
    assert http_options(args).store_liveness == 3
