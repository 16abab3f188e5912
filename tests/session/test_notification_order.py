"""A response completes its request only after the handlers of the notifications that came before it.

A tool that logs three messages and then returns is read as four frames, often in one chunk (through a
proxy, nearly always). The notification handler runs in the Session's job worker, one job at a time; the
response used to complete ``await request(...)`` at once, so the caller could resume before the last log
messages were handled (seen as a rare failure of tests/proxy/test_stdio_client.py under load). Now the
response is held behind the handlers queued before it (outgoing.py: Order), over a memory pair and over
pipes, for plain and coroutine handlers, and through ``Client``'s logging handler. A request sent from a
notification handler is not held behind that handler (it would wait forever).
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcpframe import core
from mcpframe.client import Client
from mcpframe.session import Session
from mcpframe.transports import memory_pair

from .test_progress_order import ENDS, next_request

pytestmark = pytest.mark.anyio


def log_frame(text: str) -> bytes:
    return core.encode_notification("notifications/message", {"level": "info", "data": text})


async def answer_after_logs(peer: Any, request: Any, *, one_chunk: bool) -> None:
    frames = [log_frame(f"log {step}") for step in range(1, 4)]
    frames.append(core.encode_result(request.id, {"content": [], "done": True}))
    if one_chunk:
        await peer.send(b"".join(frames))
    else:
        for frame in frames:
            await peer.send(frame)


@pytest.mark.parametrize("one_chunk", [True, False], ids=["one-chunk", "back-to-back"])
@pytest.mark.parametrize("kind", ["plain", "yielding"])
@pytest.mark.parametrize("ends", sorted(ENDS))
async def test_a_request_returns_after_the_handlers_of_earlier_notifications(
    ends: str, kind: str, one_chunk: bool
) -> None:
    seen: list[str] = []

    def plain(message: Any) -> None:
        seen.append(message.params["data"])

    async def yielding(message: Any) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(message.params["data"])

    async with ENDS[ends]() as (peer, ours):
        session = Session(ours, notification_handler=plain if kind == "plain" else yielding)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)

            async def script() -> None:
                request = await next_request(peer, core.Decoder(), "tools/call")
                await answer_after_logs(peer, request, one_chunk=one_chunk)

            tg.start_soon(script)
            with anyio.fail_after(10):
                result = await session.request("tools/call", {})
                assert seen == ["log 1", "log 2", "log 3"]  # at the moment the await returned
                assert result["done"] is True
            await session.aclose()
        await peer.aclose()


async def test_client_logging_handler_has_every_log_before_call_tool_returns() -> None:
    logged: list[Any] = []
    peer, ours = memory_pair()

    async def server() -> None:
        decoder = core.Decoder()
        initialize = await next_request(peer, decoder, "initialize")
        info = {"protocolVersion": initialize.params["protocolVersion"], "capabilities": {"tools": {}}}
        await peer.send(
            core.encode_result(initialize.id, {**info, "serverInfo": {"name": "s", "version": "1"}})
        )
        for _ in range(20):
            call = await next_request(peer, decoder, "tools/call")
            await answer_after_logs(peer, call, one_chunk=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(server)
        with anyio.fail_after(10):
            async with Client(transport=ours, mode="legacy", logging_handler=logged.append) as client:
                for n in range(20):
                    await client.call_tool("work", {})
                    assert [entry["data"] for entry in logged][-3:] == ["log 1", "log 2", "log 3"]
                    assert len(logged) == 3 * (n + 1)
    await peer.aclose()


async def test_a_request_from_a_notification_handler_is_not_held_behind_it() -> None:
    """The handler of the first notification asks the peer something and waits for the answer, while a
    second notification is queued behind it: that answer must reach the handler (no deadlock)."""
    peer, ours = memory_pair()
    answers: list[Any] = []
    answered = anyio.Event()
    session: Session

    async def handler(message: Any) -> None:
        if message.params["data"] == "ask":
            answers.append(await session.request("ping", {}))
            answered.set()

    session = Session(ours, notification_handler=handler)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        decoder = core.Decoder()
        with anyio.fail_after(10):
            await peer.send(log_frame("ask") + log_frame("queued behind it"))
            ping = await next_request(peer, decoder, "ping")
            await peer.send(core.encode_result(ping.id, {"pong": True}) + log_frame("after"))
            await answered.wait()
        assert answers == [{"pong": True}]
        await session.aclose()
    await peer.aclose()
