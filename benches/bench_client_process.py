"""The mcpframe client receiving large tool results from a subprocess server: the two process transports.

The server is mcpframe's own ``Server`` with one tool, ``blob(size) -> "x" * size``, run as a child
process; the client is ``mcpframe.client.Client`` over one of two transports to it:

- ``streams`` (the old path, kept for processes opened elsewhere): ``anyio.open_process`` with piped
  stdin/stdout and ``ProcessTransport(process)``; reads go through asyncio's pipe transport (a fresh
  256 KiB buffer per read) and are copied into anyio's stream, and the Session runs a reader task.
- ``fd`` (what ``spawn`` / ``Client.stdio`` do now): pipes of our own driven by ``FdTransport`` (one
  reused read buffer, reads in the loop's readiness callback handed straight to the Session via ``pump``),
  the child's stdout pipe widened to 1 MiB where Linux allows.
- ``fd-64k``: the same transport on pipes left at the kernel's default size (64 KiB on Linux), built here
  with ``ProcessTransport(process, pipes=...)``: what the reader alone gains, without the wider pipes.

Per size (1, 8, 32 MiB) all three sit in one group, named with the core backend of this process (the child
inherits ``MCPFRAME_BACKEND``). Each client is checked before timing (the text is exactly ``size`` x's)
and every timed result is checked by length. Run side by side:

    MCPFRAME_BACKEND=native .venv/bin/python -m pytest benches/bench_client_process.py --benchmark-enable \\
        --benchmark-only --benchmark-columns=min,median,mean,ops --benchmark-sort=name

On a busy machine the contenders, timed one after the other, see different load. Run as a script, the
three clients are open at once and their calls alternate (each result checked), and the client's own CPU
time per call (its event loop thread) is printed beside the wall time:

    MCPFRAME_BACKEND=python .venv/bin/python benches/bench_client_process.py [--calls 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from mcpframe import core
from mcpframe.client import Client
from mcpframe.transports import ProcessTransport

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024
SIZES = [1, 8, 32]
TRANSPORTS = ["streams", "fd-64k", "fd"]
ROUNDS = 15
SERVER = """
from mcpframe.server import Server

server = Server("bench-blob", version="1.0.0")


@server.tool
async def blob(size: int) -> str:
    return "x" * size


server.run()
"""


def child_env() -> dict[str, str]:
    path = [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


@asynccontextmanager
async def connected(transport: str) -> AsyncIterator[Client]:
    """A client on the blob server over ``transport`` (``streams``, ``fd-64k`` or ``fd``)."""
    args = ["-c", SERVER]
    if transport == "fd":
        async with Client.stdio(sys.executable, args, env=child_env(), timeout=120) as client:
            yield client
        return
    if transport == "fd-64k":
        pipe = await narrow_pipes_transport([sys.executable, *args])
    else:
        process = await anyio.open_process(
            [sys.executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=child_env(),
            start_new_session=True,
        )
        pipe = ProcessTransport(process)
        assert pipe.pump is None  # really the old path: a reader task over anyio's streams
    try:
        async with Client(transport=pipe, timeout=120) as client:
            yield client
    finally:
        await pipe.aclose()


async def narrow_pipes_transport(command: list[str]) -> ProcessTransport:
    """``spawn`` minus the pipe widening: default-size pipes handed to ``ProcessTransport``."""
    child_stdin, write_fd = os.pipe()
    read_fd, child_stdout = os.pipe()
    try:
        process = await anyio.open_process(
            command, stdin=child_stdin, stdout=child_stdout, env=child_env(), start_new_session=True
        )
    finally:
        os.close(child_stdin)
        os.close(child_stdout)
    pipe = ProcessTransport(process, pipes=(read_fd, write_fd))
    assert pipe.pump is not None
    return pipe


async def blob_text(client: Client, size: int) -> str:
    result = await client.call_tool("blob", {"size": size})
    text: str = result["content"][0]["text"]
    return text


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as blocking_portal:
        yield blocking_portal


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mib", SIZES)
def test_client_tool_result(benchmark: Any, portal: BlockingPortal, mib: int, transport: str) -> None:
    size = mib * MiB
    benchmark.group = f"client-process-{mib:02d}MiB ({core.BACKEND} core)"
    with portal.wrap_async_context_manager(connected(transport)) as client:
        assert portal.call(blob_text, client, size) == "x" * size  # checked before timing

        def call() -> None:
            assert len(portal.call(blob_text, client, size)) == size

        benchmark.pedantic(call, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(transport=transport, backend=core.BACKEND, result_bytes=size)
    print(f"[{core.BACKEND} core] {transport}: {mib} MiB tool result checked")


async def interleaved(calls: int) -> None:
    """Open a client per transport, alternate their calls per size, print medians of wall and CPU time."""
    async with AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(connected(name)) for name in TRANSPORTS}
        for mib in SIZES:
            size = mib * MiB
            wall: dict[str, list[float]] = {name: [] for name in TRANSPORTS}
            cpu: dict[str, list[float]] = {name: [] for name in TRANSPORTS}
            for client in clients.values():
                assert await blob_text(client, size) == "x" * size  # checked before timing
            for _ in range(max(3, calls // mib)):
                for name, client in clients.items():
                    started, used = time.perf_counter(), time.thread_time()
                    assert len(await blob_text(client, size)) == size
                    cpu[name].append(time.thread_time() - used)
                    wall[name].append(time.perf_counter() - started)
            for name in TRANSPORTS:
                print(
                    f"{core.BACKEND:6} core  {mib:2} MiB  {name:7}  wall median {ms(wall[name]):8.2f} ms"
                    f"  min {min(wall[name]) * 1000:8.2f} ms  client CPU median {ms(cpu[name]):7.2f} ms"
                )


def ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


if __name__ == "__main__":
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--calls", type=int, default=40, help="calls per transport at 1 MiB (fewer above)")
    anyio.run(interleaved, parser.parse_args().calls)
