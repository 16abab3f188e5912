"""Shared, expensive set-up of the scale-out tests: one redis-server and three instances per session."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.conformance.conftest import conformance_harness  # noqa: F401 - test_conformance.py uses it

from .support import Instance, RedisProcess, redis_server_or_fail


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server on a free loopback port (fails under CI=true when redis-server is missing)."""
    program = redis_server_or_fail()
    process = RedisProcess(program, tmp_path_factory.mktemp("redis") / "redis.log")
    process.start()
    yield process
    process.stop()


@contextmanager
def instances(redis: RedisProcess, logs: Path, count: int, *flags: str) -> Iterator[list[Instance]]:
    """`count` instances sharing `redis` (a short store timeout for the tests), all stopped on exit.

    They are started together (they import in parallel), and stopped even when one of them fails to start.
    """
    common = ["--store", redis.url, "--store-timeout", "1", *flags]
    started: list[Instance] = []
    try:
        started += [Instance(common, logs / f"instance{n}.log", wait=False) for n in range(count)]
        yield [instance.ready() for instance in started]
    finally:
        for instance in started:
            instance.stop()


@pytest.fixture(scope="session")
def cluster(redis: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Instance]]:
    """Three `mcpframe serve --http --store redis://...` instances, shared by the tests that kill none."""
    with instances(redis, tmp_path_factory.mktemp("cluster"), 3) as three:
        yield three
