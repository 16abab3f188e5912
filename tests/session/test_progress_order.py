"""Progress callbacks run before the answer that follows them completes the request (outgoing.py: Order).

The peer is scripted: it reads our request, then writes progress notifications and the response either in
ONE chunk (the reader decodes them all in one go) or as separate writes back to back. By the time
``await request(...)`` returns, every callback for progress sent before the response must have run, in
order, whether the callback is plain or a coroutine that yields; over a memory pair, over pipes
(``FdTransport``, what stdio uses) and through ``Client.call_tool(on_progress=...)``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcpframe import core
from mcpframe.client import Client
from mcpframe.protocol import NOTIFICATIONS_PROGRESS
from mcpframe.session import Session
from mcpframe.transports import FdTransport, Transport, memory_pair

pytestmark = pytest.mark.anyio

Seen = list[Any]
Callback = Callable[[float, Any, Any], Awaitable[None] | None]


def callbacks(seen: Seen) -> dict[str, Callback]:
    """A plain callback, and a coroutine one that yields to the loop before it records."""

    def plain(progress: float, total: Any, message: Any) -> None:
        seen.append(progress)

    async def yielding(progress: float, total: Any, message: Any) -> None:
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        seen.append(progress)

    return {"plain": plain, "yielding": yielding}


def progress_frame(token: Any, step: int) -> bytes:
    return core.encode_notification(NOTIFICATIONS_PROGRESS, {"progressToken": token, "progress": step})


async def next_request(transport: Transport, decoder: Any, wanted: str) -> Any:
    """Read until a request for ``wanted`` (answering nothing on the way)."""
    while True:
        data = await transport.receive()
        assert data, f"EOF before a {wanted!r} request"
        for item in decoder.feed(data):
            if getattr(item, "kind", None) == "request" and item.method == wanted:
                return item


async def answer_with_progress(peer: Transport, request: Any, *, one_chunk: bool, steps: int = 3) -> None:
    """Progress 1..steps for ``request``, then its result: one write, or one write per frame."""
    token = request.params["_meta"]["progressToken"]
    frames = [progress_frame(token, step) for step in range(1, steps + 1)]
    frames.append(core.encode_result(request.id, {"content": [], "done": True}))
    if one_chunk:
        await peer.send(b"".join(frames))
    else:
        for frame in frames:
            await peer.send(frame)


@asynccontextmanager
async def memory_ends() -> AsyncIterator[tuple[Transport, Transport]]:
    left, right = memory_pair()
    yield left, right


@asynccontextmanager
async def pipe_ends() -> AsyncIterator[tuple[Transport, Transport]]:
    """Two ``FdTransport``s over a pair of pipes (the stdio transport's own class)."""
    to_us_r, to_us_w = os.pipe()
    to_peer_r, to_peer_w = os.pipe()
    try:
        yield FdTransport(to_peer_r, to_us_w), FdTransport(to_us_r, to_peer_w)
    finally:
        for fd in (to_us_r, to_us_w, to_peer_r, to_peer_w):
            os.close(fd)


ENDS = {"memory": memory_ends, "pipes": pipe_ends}


@pytest.mark.parametrize("one_chunk", [True, False], ids=["one-chunk", "back-to-back"])
@pytest.mark.parametrize("kind", ["plain", "yielding"])
@pytest.mark.parametrize("ends", sorted(ENDS))
async def test_session_request_returns_after_the_callbacks_of_earlier_progress(
    ends: str, kind: str, one_chunk: bool
) -> None:
    seen: Seen = []
    async with ENDS[ends]() as (peer, ours):
        session = Session(ours)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)

            async def script() -> None:
                request = await next_request(peer, core.Decoder(), "tools/call")
                await answer_with_progress(peer, request, one_chunk=one_chunk)

            tg.start_soon(script)
            with anyio.fail_after(10):
                result = await session.request("tools/call", {}, on_progress=callbacks(seen)[kind])
                assert seen == [1, 2, 3]  # before anything else may run: at the moment the await returned
                assert result["done"] is True
            await session.aclose()
        await peer.aclose()
    assert session.progress_waiters == 0


@pytest.mark.parametrize("one_chunk", [True, False], ids=["one-chunk", "back-to-back"])
@pytest.mark.parametrize("kind", ["plain", "yielding"])
async def test_client_call_tool_returns_after_the_callbacks_of_earlier_progress(
    kind: str, one_chunk: bool
) -> None:
    seen: Seen = []
    peer, ours = memory_pair()

    async def server() -> None:
        decoder = core.Decoder()
        initialize = await next_request(peer, decoder, "initialize")
        info = {"protocolVersion": initialize.params["protocolVersion"], "capabilities": {"tools": {}}}
        await peer.send(
            core.encode_result(initialize.id, {**info, "serverInfo": {"name": "s", "version": "1"}})
        )
        call = await next_request(peer, decoder, "tools/call")
        await answer_with_progress(peer, call, one_chunk=one_chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(server)
        with anyio.fail_after(10):
            async with Client(transport=ours, mode="legacy") as client:
                result = await client.call_tool("work", {}, on_progress=callbacks(seen)[kind])
                assert seen == [1, 2, 3]
                assert result["done"] is True
    await peer.aclose()


@asynccontextmanager
async def scripted_session() -> AsyncIterator[tuple[Session, Transport]]:
    peer, ours = memory_pair()
    session = Session(ours)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        with anyio.fail_after(10):
            yield session, peer
        await session.aclose()
    await peer.aclose()


async def test_a_slow_callback_holds_only_its_own_answer_and_not_the_reader() -> None:
    """While a callback blocks, the held answer waits, its timeout is lifted (the answer is in), and the
    reader goes on: another request is answered meanwhile."""
    release = anyio.Event()
    entered = anyio.Event()
    quick_done = anyio.Event()
    seen: Seen = []
    finished: list[Any] = []

    async def blocking(progress: float, total: Any, message: Any) -> None:
        entered.set()
        await release.wait()
        seen.append(progress)

    async with scripted_session() as (session, peer), anyio.create_task_group() as tg:

        async def slow_call() -> None:
            finished.append(await session.request("slow", {}, on_progress=blocking, timeout=0.05))

        async def quick_call() -> None:
            finished.append(await session.request("quick"))
            quick_done.set()

        tg.start_soon(slow_call)
        decoder = core.Decoder()
        slow = await next_request(peer, decoder, "slow")
        await answer_with_progress(peer, slow, one_chunk=True, steps=1)
        await entered.wait()
        tg.start_soon(quick_call)
        quick = await next_request(peer, decoder, "quick")
        await peer.send(core.encode_result(quick.id, "fast"))
        await quick_done.wait()  # answered while the slow call's callback still blocks
        await anyio.sleep(0.1)  # not a synchronisation: lets the slow call's 0.05 s timeout pass
        assert finished == ["fast"]  # held, and not timed out
        release.set()
    assert seen == [1]
    assert finished == ["fast", {"content": [], "done": True}]


async def test_closing_the_session_releases_a_held_answer() -> None:
    """The worker is gone with the session: a held answer is returned (it did arrive), never left waiting."""
    entered = anyio.Event()

    async def never(progress: float, total: Any, message: Any) -> None:
        entered.set()
        await anyio.Event().wait()

    async with scripted_session() as (session, peer), anyio.create_task_group() as tg:
        results: list[Any] = []

        async def call() -> None:
            results.append(await session.request("work", {}, on_progress=never))

        tg.start_soon(call)
        request = await next_request(peer, core.Decoder(), "work")
        await answer_with_progress(peer, request, one_chunk=True, steps=2)
        await entered.wait()
        assert results == []
        await session.aclose()
    assert results == [{"content": [], "done": True}]
    assert session.pending == 0


async def test_progress_after_the_answer_is_not_reported() -> None:
    """Late progress (after its response, same chunk) cannot hold the answer or reach the callback."""
    seen: Seen = []
    async with scripted_session() as (session, peer), anyio.create_task_group() as tg:
        results: list[Any] = []

        async def call() -> None:
            results.append(await session.request("work", {}, on_progress=callbacks(seen)["yielding"]))

        tg.start_soon(call)
        request = await next_request(peer, core.Decoder(), "work")
        token = request.params["_meta"]["progressToken"]
        late = progress_frame(token, 9)
        await peer.send(progress_frame(token, 1) + core.encode_result(request.id, "ok") + late)
    assert results == ["ok"]
    assert seen == [1]


async def test_cancelling_a_call_whose_answer_is_held_sends_no_cancellation() -> None:
    """The answer is in: the peer is not told to cancel a request it has already answered."""
    entered = anyio.Event()

    async def never(progress: float, total: Any, message: Any) -> None:
        entered.set()
        await anyio.Event().wait()

    async with scripted_session() as (session, peer):
        decoder = core.Decoder()
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: session.request("work", {}, on_progress=never))
            request = await next_request(peer, decoder, "work")
            await answer_with_progress(peer, request, one_chunk=True, steps=1)
            await entered.wait()
            tg.cancel_scope.cancel()
        await peer.send(core.encode_request("barrier", "ping"))  # answered after anything written before
        written: list[Any] = []
        while not any(getattr(item, "id", None) == "barrier" for item in written):
            written.extend(decoder.feed(await peer.receive()))
    assert [item.method for item in written if item.kind == "notification"] == []
