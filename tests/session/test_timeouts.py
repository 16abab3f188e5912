"""Outgoing requests: timeouts, progress, the hard cap, late responses, and cleanup on every path."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests._blocked import all_blocked
from tests.session._support import Handlers, RawPeer
from tests.session.test_session import assert_clean, connected

from mcpframe import core, jsonrpc
from mcpframe.errors import PendingLimitError
from mcpframe.session import JSONRPCError, RequestTimeout, Session, SessionOptions
from mcpframe.session.outgoing import PROGRESS_QUEUE
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio


async def test_timeout_raises_cancels_the_handler_and_cleans_up() -> None:
    handlers = Handlers()
    async with connected(handlers) as (client, server):
        with pytest.raises(RequestTimeout) as info:
            await client.request("slow", timeout=0.05)
        assert info.value.code == jsonrpc.REQUEST_TIMEOUT
        assert isinstance(info.value, TimeoutError)
        await handlers.cancelled_event(1).wait()
        assert await client.request("ping") == {}
        assert_clean(client, server)


async def test_default_timeout_applies() -> None:
    handlers = Handlers()
    async with connected(handlers, options=SessionOptions(timeout=0.05)) as (client, server):
        with pytest.raises(RequestTimeout):
            await client.request("slow")
        await handlers.cancelled_event(1).wait()
        assert_clean(client, server)


async def test_late_response_is_ignored() -> None:
    left, right = memory_pair()
    client = Session(left)
    peer = RawPeer(right)
    async with client:
        with pytest.raises(RequestTimeout):
            await client.request("slow", timeout=0.05)
        request = await peer.receive()
        cancel = await peer.receive()
        assert cancel.method == "notifications/cancelled"
        assert cancel.params["requestId"] == request.id
        assert cancel.params["reason"] == "timeout"
        await peer.send(core.encode_result(request.id, "too late"))
        await peer.send(core.encode_result(12345, "never asked"))

        async def answer_next() -> None:
            item = await peer.receive()
            await peer.send(core.encode_result(item.id, "fresh"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_next)
            assert await client.request("again") == "fresh"
        assert_clean(client)


async def test_progress_calls_back_in_order_and_cleans_up() -> None:
    handlers = Handlers()
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connected(handlers) as (client, server):
        assert await client.request("progress", {}, on_progress=on_progress) == "done"
        with anyio.fail_after(5):
            while len(seen) < 3:
                await all_blocked()
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert_clean(client, server)


async def test_progress_token_is_echoed_and_caller_params_untouched() -> None:
    left, right = memory_pair()
    peer = RawPeer(right)
    params: dict[str, Any] = {"x": 1, "_meta": {"other": True}}
    async with Session(left) as client, anyio.create_task_group() as tg:

        async def serve() -> None:
            request = await peer.receive()
            token = request.params["_meta"]["progressToken"]
            assert request.params["_meta"]["other"] is True
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 0.5},
                }
            )
            await peer.send(core.encode_result(request.id, "ok"))

        tg.start_soon(serve)
        calls: list[float] = []
        assert await client.request("work", params, on_progress=lambda p, t, m: calls.append(p)) == "ok"
    assert params == {"x": 1, "_meta": {"other": True}}
    assert calls == [0.5]


async def _progress_every(peer: RawPeer, interval: float, count: int | None, reply: bool) -> None:
    request = await peer.receive()
    token = request.params["_meta"]["progressToken"]
    step = 0
    while count is None or step < count:
        await anyio.sleep(interval)  # simulated work between progress reports
        step += 1
        await peer.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": step},
            }
        )
    if reply:
        await peer.send(core.encode_result(request.id, step))


async def test_progress_extends_the_timeout() -> None:
    left, right = memory_pair()
    peer = RawPeer(right)
    async with Session(left) as client, anyio.create_task_group() as tg:
        tg.start_soon(_progress_every, peer, 0.1, 8, True)
        started = anyio.current_time()
        result = await client.request("work", {}, timeout=0.5, on_progress=lambda *_: None)
        assert result == 8
        assert anyio.current_time() - started > 0.5  # it outlived its timeout thanks to progress
        assert_clean(client)


async def test_max_timeout_holds_despite_progress() -> None:
    left, right = memory_pair()
    peer = RawPeer(right)
    async with Session(left) as client, anyio.create_task_group() as tg:
        tg.start_soon(_progress_every, peer, 0.05, None, False)
        started = anyio.current_time()
        with pytest.raises(RequestTimeout):
            await client.request("work", {}, timeout=0.3, max_timeout=0.5, on_progress=lambda *_: None)
        elapsed = anyio.current_time() - started
        assert 0.5 <= elapsed < 1.5
        assert_clean(client)
        tg.cancel_scope.cancel()


async def test_max_timeout_alone_is_a_deadline() -> None:
    handlers = Handlers()
    async with connected(handlers) as (client, server):
        with pytest.raises(RequestTimeout):
            await client.request("slow", max_timeout=0.05)
        await handlers.cancelled_event(1).wait()
        assert_clean(client, server)


async def test_error_response_cleans_up() -> None:
    handlers = Handlers()
    async with connected(handlers) as (client, server):
        with pytest.raises(JSONRPCError):
            await client.request("rpcerror", {}, on_progress=lambda *_: None)
        assert_clean(client, server)


async def test_pending_limit() -> None:
    handlers = Handlers()
    async with connected(handlers, max_pending=2) as (client, server), anyio.create_task_group() as tg:
        for _ in range(2):
            tg.start_soon(client.request, "slow")
        await handlers.started_event(2).wait()
        with pytest.raises(PendingLimitError):
            await client.request("ping")
        handlers.release.set()
    assert_clean(client, server)


async def test_a_slow_progress_callback_gets_the_queued_updates_then_the_newest() -> None:
    """10,000 progress notifications while the callback is busy: it sees the first ``PROGRESS_QUEUE``
    queued behind it, then only the newest of the rest (a flood cannot grow the queue)."""
    left, right = memory_pair()
    peer = RawPeer(right)
    busy, release, last_seen = anyio.Event(), anyio.Event(), anyio.Event()
    calls: list[tuple[float, Any, Any]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        calls.append((progress, total, message))
        busy.set()
        if progress == 10_000:
            last_seen.set()
        await release.wait()

    def progress(token: Any, i: int) -> bytes:
        params = {"progressToken": token, "progress": i, "total": 10_000, "message": f"step {i}"}
        return core.encode_notification("notifications/progress", params)

    async with Session(left) as client, anyio.create_task_group() as tg:

        async def serve() -> None:
            request = await peer.receive()
            token = request.params["_meta"]["progressToken"]
            await peer.send(progress(token, 1))
            await busy.wait()
            await peer.send(b"".join(progress(token, i) for i in range(2, 10_001)))
            await peer.request("barrier", "ping")  # answered once every notification before it was read
            assert (await peer.receive()).id == "barrier"
            release.set()
            await last_seen.wait()
            await peer.send(core.encode_result(request.id, "ok"))

        tg.start_soon(serve)
        with anyio.fail_after(20):
            assert await client.request("work", {}, on_progress=on_progress) == "ok"
    queued = [(i, 10_000, f"step {i}") for i in range(1, PROGRESS_QUEUE + 2)]
    assert calls == [*queued, (10_000, 10_000, "step 10000")]
