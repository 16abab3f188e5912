"""The worker hop: every job handed over and every result woken back, one at a time and 16 at once, with a
failing call, a blocked worker and a cancelled call among them."""

from __future__ import annotations

import asyncio
import threading

import anyio
import pytest

from mcpframe import _threads
from mcpframe._threads import WorkerPool
from mcpframe.server import Server

from ._driver import legacy

pytestmark = pytest.mark.anyio


async def test_sync_tool_calls_one_at_a_time_and_many_at_once_are_all_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every job reaches a worker and every result wakes the loop, a failing one included, while another
    worker blocks and after its call is cancelled: a lost hand-over or wake-up would hang here (the
    timeouts are the failure guards)."""
    monkeypatch.setattr(_threads, "_DEFAULT", [WorkerPool(max_workers=4)])
    server = Server("hop")
    loop_thread = threading.get_ident()
    release = threading.Event()
    started = threading.Event()

    @server.tool
    def echo(text: str) -> str:
        """Echo from a worker thread."""
        assert threading.get_ident() != loop_thread
        if text == "boom":
            raise ValueError("boom")
        return text

    @server.tool
    def hold() -> str:
        """Blocks its worker until released."""
        started.set()
        release.wait(30)
        return "held"

    def call(text: str) -> dict[str, object]:
        return {"name": "echo", "arguments": {"text": text}}

    async with legacy(server) as client:
        with anyio.fail_after(60):
            for n in range(300):
                answer = await client.request("tools/call", call(f"a{n}"))
                assert answer["content"] == [{"type": "text", "text": f"a{n}"}]
            failed = await client.request("tools/call", call("boom"))
            assert failed["isError"] is True
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.request, "tools/call", {"name": "hold"})
                await anyio.to_thread.run_sync(started.wait, 30)
                for burst in range(20):  # the held worker is blocked: the others take the bursts
                    texts = [f"b{burst}.{n}" for n in range(16)]
                    answers = await asyncio.gather(*(client.request("tools/call", call(t)) for t in texts))
                    assert [a["content"][0]["text"] for a in answers] == texts
                tg.cancel_scope.cancel()  # the held call cancelled: answered as such, its worker abandoned
            for n in range(50):  # and the pool goes on, one call at a time
                answer = await client.request("tools/call", call(f"c{n}"))
                assert answer["content"] == [{"type": "text", "text": f"c{n}"}]
        release.set()
