"""The official conformance suite's server scenarios against three instances sharing Redis, behind a
round-robin balancer: it passes as it does against one instance (tests/conformance/)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import anyio.to_thread
import pytest
from tests.conformance.harness import (
    describe,
    read_checks,
    run_server_suite,
    serve_everything_http,
    summarize,
)
from tests.conformance.test_server_suite import MAX_SCORE, SCENARIOS

from .balancer import Balancer
from .support import RedisProcess

pytestmark = pytest.mark.anyio


async def test_conformance_suite_through_a_balancer(
    conformance_harness: list[str], redis: RedisProcess, tmp_path: Path
) -> None:
    with ExitStack() as stack:
        urls = [stack.enter_context(serve_everything_http(["--store", redis.url])) for _ in range(3)]
        balancer = Balancer([int(url.rsplit(":", 1)[1].split("/", 1)[0]) for url in urls])
        await balancer.start()
        try:
            result = await anyio.to_thread.run_sync(run_server_suite, balancer.url, tmp_path)
        finally:
            await balancer.aclose()
    checks = read_checks(tmp_path)
    passed, bad = summarize(checks)
    listing = "\n".join(describe(check) for check in bad)
    assert not bad, f"{len(bad)} checks did not pass:\n{listing}"
    assert len({check["scenario"] for check in checks}) == SCENARIOS, result.stdout[-3000:]
    assert passed == MAX_SCORE, result.stdout[-3000:]
