"""One SDK server's code on three stacks: the SDK's own stdio, the transport drop-in, the engine drop-in.

``tests/compat/engine_apps.py`` (an ``MCPServer``) runs as a subprocess in three modes: ``sdk``
(``app.run()``), ``dropin`` (``mcpframe.compat.install()`` then ``app.run()``: mcpframe's stdio transport
under the SDK's engine) and ``engine`` (``mcpframe.compat.serve(app)``: the app's handlers on mcpframe's
Server/Session); ``mcpframe`` runs the same two tools written for mcpframe's own ``Server``, the floor
the engine stands on. A minimal raw client (core encoder and decoder) drives ``tools/call`` on two tools, a
sync one (``echo``: the SDK runs it on a worker thread) and an async one (``add``), sequentially and as
a pipelined burst; requests/s, p50 and p99 go to ``extra_info``. Every response is checked before timing
and while timing. Counts are fixed (200 sequential, 1000 pipelined) and rounds are 3.

Run side by side: ``pytest benches/bench_engine.py --benchmark-enable`` (``MCPFRAME_BACKEND`` picks the
core backend of the mcpframe stacks).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

pytest.importorskip("mcp")

from bench_compat import RawClient, percentile, spawned
from mcpframe import core
from mcpframe._unstable import mcp_sdk as unstable_sdk

APPS = Path(__file__).resolve().parent.parent / "tests" / "compat" / "engine_apps.py"
SEQUENTIAL = 200
PIPELINED = 1000
MODES = ["sdk", "dropin", "engine", "mcpframe"]
CALLS = {
    "echo": ({"name": "echo", "arguments": {"text": "ping"}}, "ping"),
    "add": ({"name": "add", "arguments": {"a": 1, "b": 2}}, "3.0"),
}


class ModernClient(RawClient):
    """``RawClient`` speaking 2026-07-28: no handshake, the envelope in every request's ``_meta``."""

    def __init__(self, process: Any, call: dict[str, Any], expected: str) -> None:
        super().__init__(process, {**call, "_meta": MODERN_META}, expected)

    async def initialize(self) -> None:
        """Nothing: every 2026-07-28 request carries its own envelope."""


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


# The FastMCP app (``engine_apps.py MODE fastmcp``) on the same three stacks, with its sync echo tool.
# the engine reaches a FastMCP app only through fastmcp's private names (off under MCPFRAME_PUBLIC_ONLY=1)
FASTMCP_MODES = [
    "sdk",
    "dropin",
    pytest.param(
        "engine",
        marks=pytest.mark.skipif(
            not unstable_sdk.FASTMCP_CHOICE.private,
            reason=f"the engine serves FastMCP through private names: {unstable_sdk.FASTMCP_CHOICE.reason}",
        ),
    ),
]
FASTMCP_CALL = ({"name": "fast_echo", "arguments": {"text": "ping"}}, "ping")


def stack(
    mode: str, tool: str, *, fastmcp: bool = False, modern: bool = False
) -> AbstractAsyncContextManager[RawClient]:
    command = [sys.executable, str(APPS), mode, *(["fastmcp"] if fastmcp else [])]
    call = FASTMCP_CALL if fastmcp else CALLS[tool]
    client = ModernClient if modern else RawClient
    return spawned(command, lambda process: client(process, *call))


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as blocking_portal:
        yield blocking_portal


SHAPES = {"sequential": SEQUENTIAL, "pipelined": PIPELINED}


@pytest.mark.parametrize("tool", list(CALLS))
@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("mode", MODES)
def test_engine_tools_call(benchmark: Any, portal: BlockingPortal, mode: str, kind: str, tool: str) -> None:
    run_stack(benchmark, portal, mode, kind, tool, fastmcp=False)


@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("mode", FASTMCP_MODES)
def test_fastmcp_tools_call(benchmark: Any, portal: BlockingPortal, mode: str, kind: str) -> None:
    pytest.importorskip("fastmcp")
    run_stack(benchmark, portal, mode, kind, "fast_echo", fastmcp=True)


@pytest.mark.parametrize("tool", list(CALLS))
@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("mode", MODES)
def test_modern_tools_call(benchmark: Any, portal: BlockingPortal, mode: str, kind: str, tool: str) -> None:
    run_stack(benchmark, portal, mode, kind, tool, fastmcp=False, modern=True)


def run_stack(
    benchmark: Any,
    portal: BlockingPortal,
    mode: str,
    kind: str,
    tool: str,
    *,
    fastmcp: bool,
    modern: bool = False,
) -> None:
    """Check, then time ``tools/call`` of ``tool`` on one stack; figures go to ``extra_info``."""
    count = SHAPES[kind]
    era = "modern" if modern else "engine"
    benchmark.group = f"{'fastmcp' if fastmcp else era}-{tool}-{kind}-{count}"
    with portal.wrap_async_context_manager(stack(mode, tool, fastmcp=fastmcp, modern=modern)) as client:
        method = client.sequential if kind == "sequential" else client.pipelined
        assert len(portal.call(method, 5)) == 5  # checked before timing (each response is asserted)
        latencies: list[list[float]] = []
        wall: list[float] = []

        def timed() -> None:
            start = time.perf_counter()
            latencies.append(portal.call(method, count))
            wall.append(time.perf_counter() - start)

        benchmark.pedantic(timed, rounds=3, iterations=1)
    flat = [value for run in latencies for value in run]
    benchmark.extra_info.update(
        stack=f"fastmcp-{mode}" if fastmcp else mode,
        era="2026-07-28" if modern else "handshake",
        backend=core.BACKEND,
        requests=count,
        requests_per_s=round(count / min(wall)),
        p50_ms=round(percentile(flat, 0.50) * 1000, 3),
        p99_ms=round(percentile(flat, 0.99) * 1000, 3),
    )
