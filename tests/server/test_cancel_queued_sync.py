"""A `def` tool's call cancelled while it waits for a worker thread never starts.

Every worker busy, the calls behind them queue; a client that cancels the queued ones
(`notifications/cancelled`) must not see them run later, once the workers are free (before, the pool
abandoned them but still ran each: 922 of 1,000 `def` tool calls ran with 500 of them cancelled).
"""

from __future__ import annotations

import threading

import anyio
import anyio.from_thread
import pytest

from mcpframe.server import Server

from ._driver import legacy

pytestmark = pytest.mark.anyio

WORKERS = 40  # the worker pool's size (anyio's thread limiter's too, off the private path)
QUEUED = 20


async def test_sync_tool_calls_cancelled_while_queued_never_run() -> None:
    server = Server("queued")
    entered: list[int] = []
    release = threading.Event()
    full = anyio.Event()

    @server.tool
    def hold(n: int) -> int:
        """Blocks its worker until released."""
        entered.append(n)
        if len(entered) == WORKERS:
            anyio.from_thread.run_sync(full.set)
        release.wait(30)
        return n

    @server.tool
    def count() -> int:
        """How many `hold` calls started."""
        return len(entered)

    answers: dict[int, object] = {}
    scopes: dict[int, anyio.CancelScope] = {}

    try:
        with anyio.fail_after(30):
            async with legacy(server) as client:

                async def call(n: int) -> None:
                    with anyio.CancelScope() as scopes[n]:
                        params = {"name": "hold", "arguments": {"n": n}}
                        answers[n] = await client.request("tools/call", params)

                async with anyio.create_task_group() as tg:
                    for n in range(WORKERS + QUEUED):
                        tg.start_soon(call, n)
                    await full.wait()  # every worker holds a call: the others wait in the queue
                    queued = [n for n in range(WORKERS + QUEUED) if n not in entered]
                    assert len(queued) == QUEUED
                    for n in queued:
                        scopes[n].cancel()  # the client sends notifications/cancelled for each
                    assert await client.request("ping") == {}  # the cancellations were read before it
                    release.set()
                started = await client.request("tools/call", {"name": "count", "arguments": {}})
    finally:
        release.set()
    assert sorted(answers) == sorted(set(range(WORKERS + QUEUED)) - set(queued))
    assert not set(entered) & set(queued)
    assert started["content"][0]["text"] == str(WORKERS)
