"""``Outgoing`` on its own: the Session's outgoing side needs nothing of the Session but four callables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mcpframe import core
from mcpframe.session import ConnectionClosed, JSONRPCError
from mcpframe.session.outgoing import Outgoing

pytestmark = pytest.mark.anyio


class Wiring:
    """What a Session hands its Outgoing, recording every use."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.sent: list[bytes] = []
        self.jobs: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
        self.expected = 0
        self.sent_one = anyio.Event()

    def write(self, frame: bytes) -> None:
        self.written.append(frame)

    async def send(self, frame: bytes) -> None:
        self.sent.append(frame)
        self.sent_one.set()

    def queue(self, func: Callable[..., Any], *args: Any) -> None:
        self.jobs.append((func, args))

    def expect_answer(self) -> None:
        self.expected += 1

    def outgoing(self, **overrides: Any) -> Outgoing:
        options: dict[str, Any] = {"max_pending": 8, "timeout": None, **overrides}
        return Outgoing(
            write=self.write,
            send=self.send,
            queue=self.queue,
            notices_waiting=lambda: 0,  # no notification handler here (test_notification_order.py has them)
            expect_answer=self.expect_answer,
            **options,
        )

    async def asked(self) -> Any:
        """The last request sent, decoded (waits until one was sent)."""
        await self.sent_one.wait()
        self.sent_one = anyio.Event()
        return one(self.sent[-1])


def one(frame: bytes) -> Any:
    """The one message of ``frame``, decoded."""
    (message,) = core.decode(frame)
    return message


def answer(rid: Any, result: Any) -> Any:
    return one(core.encode_result(rid, result))


async def test_a_request_is_sent_answered_and_forgotten() -> None:
    wiring = Wiring()
    outgoing = wiring.outgoing()
    outcome: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def ask() -> None:
            outcome.append(await outgoing.request("sum", {"a": 1}))

        tg.start_soon(ask)
        with anyio.fail_after(10):
            asked = await wiring.asked()
            assert (asked.method, asked.params, outgoing.pending, wiring.expected) == ("sum", {"a": 1}, 1, 1)
            outgoing.resolve(answer(asked.id, 3))
    assert outcome == [3]
    assert outgoing.pending == 0
    assert wiring.written == []  # nothing to cancel


async def test_progress_is_queued_for_the_job_worker_and_an_error_answer_raises() -> None:
    wiring = Wiring()
    outgoing = wiring.outgoing()
    seen: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def ask() -> None:
            with pytest.raises(JSONRPCError) as info:
                await outgoing.request("work", {}, on_progress=lambda *update: seen.append(update))
            seen.append(info.value.code)

        tg.start_soon(ask)
        with anyio.fail_after(10):
            asked = await wiring.asked()
            token = asked.params["_meta"]["progressToken"]
            assert outgoing.progress({"progressToken": token, "progress": 1, "total": 2}) is True
            assert outgoing.progress({"progressToken": "someone else's", "progress": 1}) is False
            for func, args in wiring.jobs:  # the Session's worker would run these, in order
                await func(*args)
            outgoing.resolve(one(core.encode_error(asked.id, -32000, "no")))
    assert seen == [(1, 2, None), -32000]
    assert outgoing.progress_waiters == 0


async def test_a_timeout_writes_the_cancellation_unless_sending_stopped() -> None:
    wiring = Wiring()
    outgoing = wiring.outgoing(timeout=0.01)
    with anyio.fail_after(10), pytest.raises(TimeoutError):
        await outgoing.request("slow")
    (cancel,) = [one(frame) for frame in wiring.written]
    assert (cancel.method, cancel.params["reason"]) == ("notifications/cancelled", "timeout")
    outgoing.stop_sending()
    with pytest.raises(ConnectionClosed):
        await outgoing.request("refused")
    with pytest.raises(ConnectionClosed):
        await outgoing.notify("refused too")
    assert len(wiring.written) == 1


async def test_end_of_input_fails_the_waiters_but_notifications_still_go_out() -> None:
    wiring = Wiring()
    outgoing = wiring.outgoing()
    failures: list[BaseException] = []
    async with anyio.create_task_group() as tg:

        async def ask() -> None:
            try:
                await outgoing.request("question")
            except ConnectionClosed as exc:
                failures.append(exc)

        tg.start_soon(ask)
        with anyio.fail_after(10):
            await wiring.asked()
            outgoing.end_of_input(ConnectionClosed("the peer closed the connection"))
    assert [str(exc) for exc in failures] == ["the peer closed the connection"]
    await outgoing.notify("notifications/message", {"level": "info"})
    assert one(wiring.sent[-1]).method == "notifications/message"
    with pytest.raises(ConnectionClosed):
        await outgoing.request("no answer can come")
    assert wiring.written == []  # no cancellation is sent for a request failed by the end of input
