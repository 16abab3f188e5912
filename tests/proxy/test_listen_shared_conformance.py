"""The official MCP conformance server suite THROUGH `mcpframe proxy --listen --multiplex shared`: every
scenario's session over the one `mcpframe serve examples/everything.py` child the proxy initialized itself
(the whole suite in the native pass, `SUBSET` otherwise, as tests/proxy/test_listen_conformance.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conformance.conftest import conformance_harness  # the fixture (installs the pinned harness)
from tests.conformance.harness import RETRY_MS, SSE_CLOSE_IDLE
from tests.proxy._listen_support import SERVE_EVERYTHING, listen_command, running
from tests.proxy.test_listen_conformance import EVERY_SCENARIO, _every_check_passes, _the_subset_passes

__all__ = ["conformance_harness"]


@pytest.fixture(scope="module")
def shared_url() -> Iterator[str]:
    flags = ["--multiplex", "shared", "--sse-close-idle", SSE_CLOSE_IDLE, "--retry-ms", RETRY_MS]
    with running(listen_command(*SERVE_EVERYTHING, flags=flags)) as url:
        yield url


def test_the_conformance_suite_passes_through_the_shared_child(
    conformance_harness: list[str], shared_url: str, tmp_path: Path
) -> None:
    if EVERY_SCENARIO:
        _every_check_passes(shared_url, tmp_path)
    else:
        _the_subset_passes(conformance_harness, shared_url, tmp_path)
