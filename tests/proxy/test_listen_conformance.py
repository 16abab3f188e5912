"""The official MCP conformance server suite (pinned 0.1.16) THROUGH the listening proxy, in front of
`mcpframe serve examples/everything.py` over stdio.

The whole suite takes ~30 s through the proxy, so it runs once per suite run: in the native pass (as the
install test does), where every scenario must pass as it does directly (tests/conformance/
test_server_suite.py); the python pass runs the scenarios of `SUBSET`. `make conformance-proxy`
(MCPFRAME_PROXY_CONFORMANCE=all) runs every scenario on both backends.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conformance.conftest import conformance_harness  # the fixture (installs the pinned harness)
from tests.conformance.harness import (
    RETRY_MS,
    SSE_CLOSE_IDLE,
    describe,
    read_checks,
    run_server_suite,
    summarize,
)
from tests.conformance.test_server_suite import MAX_SCORE, SCENARIOS
from tests.proxy._listen_support import SERVE_EVERYTHING, listen_command, running

from mcpframe import core

SUBSET = ["tools-call-with-progress", "tools-call-sampling", "server-sse-polling"]
"""~3 s each (a harness start apiece): progress routed by token, a server request and its answer, a resumed
stream. The other scenarios' routes are covered by tests/proxy/test_listen*.py."""
__all__ = ["conformance_harness"]

EVERY_SCENARIO = os.environ.get("MCPFRAME_PROXY_CONFORMANCE") == "all" or (
    core.BACKEND == "native" and not os.environ.get("MCPFRAME_PUBLIC_ONLY")
)


@pytest.fixture(scope="module")
def proxy_url() -> Iterator[str]:
    flags = ["--sse-close-idle", SSE_CLOSE_IDLE, "--retry-ms", RETRY_MS]
    with running(listen_command(*SERVE_EVERYTHING, flags=flags)) as url:
        yield url


def test_the_conformance_suite_passes_through_the_proxy(
    conformance_harness: list[str], proxy_url: str, tmp_path: Path
) -> None:
    """Every scenario in the native pass (and under `make conformance-proxy`), `SUBSET` otherwise."""
    if EVERY_SCENARIO:
        _every_check_passes(proxy_url, tmp_path)
    else:
        _the_subset_passes(conformance_harness, proxy_url, tmp_path)


def _the_subset_passes(conformance_harness: list[str], proxy_url: str, tmp_path: Path) -> None:
    bad: list[str] = []
    for scenario in SUBSET:
        out = tmp_path / scenario
        command = [*conformance_harness, "server", "--url", proxy_url, "--scenario", scenario, "-o", str(out)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        passed, failing = summarize(read_checks(out))
        bad += [describe(check) for check in failing]
        if passed == 0 or result.returncode != 0:
            bad.append(f"{scenario}: {passed} passed, exit {result.returncode}: {result.stdout[-800:]}")
    assert not bad, "\n".join(bad)


def _every_check_passes(proxy_url: str, tmp_path: Path) -> None:
    result = run_server_suite(proxy_url, tmp_path)
    checks = read_checks(tmp_path)
    passed, bad = summarize(checks)
    listing = "\n".join(describe(check) for check in bad)
    assert not bad, f"{len(bad)} checks did not pass through the proxy:\n{listing}"
    assert len({check["scenario"] for check in checks}) == SCENARIOS, result.stdout[-3000:]
    assert passed == MAX_SCORE, result.stdout[-3000:]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
