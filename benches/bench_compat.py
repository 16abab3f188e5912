"""The official SDK over its own stdio transports vs over mcpframe's drop-ins (``mcpframe.compat``).

Server side: the SDK's ``MCPServer`` (tests/compat/sdk_server.py) on its own ``stdio_server`` vs on the
drop-in, driven by a minimal raw client (core encoder and decoder, so the server is what is measured):
sequential ``tools/call`` round trips and a pipelined burst; requests/s, p50 and p99 go to ``extra_info``.

Client side: the SDK's ``ClientSession`` receiving a 1, 8 and 32 MiB tool result from the same SDK server,
through the SDK's ``stdio_client`` vs the drop-in. The SDK's reader rebuilds its text buffer for every
chunk (quadratic): its 32 MiB case runs a single round.

Every benchmark checks its output before it times. A normal test run (``--benchmark-disable``) runs each
once; ``make bench`` (or ``pytest benches/bench_compat.py --benchmark-enable``) times them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from anyio.abc import Process
from anyio.from_thread import BlockingPortal, start_blocking_portal

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client as sdk_stdio_client

import mcpframe
from mcpframe import core
from mcpframe.compat import mcp_sdk

SERVER = Path(__file__).resolve().parent.parent / "tests" / "compat" / "sdk_server.py"
MiB = 1024 * 1024
SEQUENTIAL = 200
PIPELINED = 1000
CALL = {"name": "echo", "arguments": {"text": "ping"}}
CLIENTS = {"sdk": sdk_stdio_client, "dropin": mcp_sdk.stdio_client}


def child_env() -> dict[str, str]:
    root = str(Path(mcpframe.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "MCPFRAME_BACKEND": core.BACKEND}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class RawClient:
    """Just enough MCP client to drive a server at full speed: initialize, then ``tools/call`` of ``call``
    by id, every answer's first text checked against ``expected``."""

    def __init__(self, process: Process, call: dict[str, Any] = CALL, expected: str = "ping") -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.call = call
        self.expected = expected
        self.process = process
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.decoder = core.Decoder()
        self.next_id = 1

    async def responses(self, count: int) -> AsyncIterator[Any]:
        """The next ``count`` responses, as they arrive (notifications skipped)."""
        while count:
            for item in self.decoder.feed(await self.stdout.receive(1 << 20)):
                assert isinstance(item, core.Message), item
                if item.kind in ("result", "error"):
                    count -= 1
                    yield item

    async def initialize(self) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "0"},
        }
        await self.stdin.send(core.encode_request(0, "initialize", params))
        async for message in self.responses(1):
            assert message.kind == "result", message.error
        await self.stdin.send(core.encode_notification("notifications/initialized"))

    def requests(self, count: int) -> tuple[list[int], bytes]:
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        return ids, b"".join(core.encode_request(i, "tools/call", self.call) for i in ids)

    async def sequential(self, count: int) -> list[float]:
        latencies = []
        for request_id in self.requests(count)[0]:
            start = time.perf_counter()
            await self.stdin.send(core.encode_request(request_id, "tools/call", self.call))
            async for message in self.responses(1):
                assert message.id == request_id
                assert message.result["content"][0]["text"] == self.expected, message.result
            latencies.append(time.perf_counter() - start)
        return latencies

    async def pipelined(self, count: int) -> list[float]:
        ids, data = self.requests(count)
        start = time.perf_counter()
        latencies: dict[int | str | None, float] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.stdin.send, data)
            async for message in self.responses(count):
                assert message.result["content"][0]["text"] == self.expected, message.result
                latencies[message.id] = time.perf_counter() - start
        assert sorted(latencies) == ids
        return list(latencies.values())


C = TypeVar("C", bound="RawClient")


@asynccontextmanager
async def spawned(command: list[str], make_client: Callable[[Process], C]) -> AsyncIterator[C]:
    """Start ``command``, hand back its initialized raw client, and end it by closing its stdin."""
    async with await anyio.open_process(command, env=child_env(), stderr=subprocess.DEVNULL) as process:
        client = make_client(process)
        with anyio.fail_after(60):
            await client.initialize()
        yield client
        await client.stdin.aclose()
        with anyio.fail_after(10):
            await process.wait()


def raw_server(mode: str) -> AbstractAsyncContextManager[RawClient]:
    return spawned([sys.executable, str(SERVER), mode], RawClient)


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as blocking_portal:
        yield blocking_portal


@pytest.fixture(scope="module", params=["sdk", "dropin"])
def server(request: pytest.FixtureRequest, portal: BlockingPortal) -> Iterator[tuple[str, RawClient]]:
    with portal.wrap_async_context_manager(raw_server(request.param)) as client:
        yield request.param, client


def record(benchmark: Any, mode: str, count: int, latencies: list[list[float]], wall: list[float]) -> None:
    flat = [x for run in latencies for x in run]
    benchmark.extra_info.update(
        transport=mode,
        backend=core.BACKEND,
        requests=count,
        requests_per_s=round(count / min(wall)),
        p50_ms=round(percentile(flat, 0.50) * 1000, 3),
        p99_ms=round(percentile(flat, 0.99) * 1000, 3),
    )


def run_timed(
    portal: BlockingPortal, coroutine: Any, count: int, latencies: list[Any], wall: list[float]
) -> None:
    start = time.perf_counter()
    latencies.append(portal.call(coroutine, count))
    wall.append(time.perf_counter() - start)


@pytest.mark.parametrize(("kind", "count"), [("sequential", SEQUENTIAL), ("pipelined", PIPELINED)])
def test_server_tools_call(
    benchmark: Any, portal: BlockingPortal, server: tuple[str, RawClient], kind: str, count: int
) -> None:
    mode, client = server
    benchmark.group = f"compat-server-{kind}-{count}"
    method = client.sequential if kind == "sequential" else client.pipelined
    assert len(portal.call(method, 5)) == 5  # checked before timing (each response is asserted)
    latencies: list[list[float]] = []
    wall: list[float] = []
    benchmark.pedantic(run_timed, args=(portal, method, count, latencies, wall), rounds=3, iterations=1)
    record(benchmark, mode, count, latencies, wall)


@asynccontextmanager
async def sdk_session(client: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), "sdk"], env=child_env())
    async with CLIENTS[client](params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def receive_blob(session: ClientSession, size: int) -> int:
    with anyio.fail_after(120):  # the cap for the SDK's quadratic reader
        result = await session.call_tool("blob", {"size": size})
    text: str = result.content[0].text  # type: ignore[union-attr]
    return len(text)


@pytest.mark.parametrize("client", ["sdk", "dropin"])
@pytest.mark.parametrize("mib", [1, 8, pytest.param(32, marks=pytest.mark.slow)])
def test_client_large_result(benchmark: Any, portal: BlockingPortal, client: str, mib: int) -> None:
    size = mib * MiB
    benchmark.group = f"compat-client-result-{mib}MiB"
    benchmark.extra_info.update(transport=client, backend=core.BACKEND, bytes=size)
    with portal.wrap_async_context_manager(sdk_session(client)) as session:
        assert portal.call(receive_blob, session, 1024) == 1024  # checked before timing
        rounds = 1 if client == "sdk" and mib >= 32 else 3
        result = benchmark.pedantic(
            portal.call, args=(receive_blob, session, size), rounds=rounds, iterations=1
        )
        assert result == size
