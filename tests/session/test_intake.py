"""``Intake`` on its own: it needs nothing of the Session but what it is built with.

Its transport (pause and resume only), the outgoing side, the outbox, the table of running requests, the
options and six callables; here each is a recording stand-in, so the flow control is seen directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mcpframe._api import Id, MessageLike
from mcpframe.session import SessionOptions
from mcpframe.session.batch import Batch
from mcpframe.session.intake import Intake
from mcpframe.session.outbox import Outbox
from mcpframe.session.outgoing import Outgoing

pytestmark = pytest.mark.anyio


def _request(rid: int, method: str = "tools/call") -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"%s"}\n' % (rid, method.encode())


def _notification(method: str, params: bytes = b"{}") -> bytes:
    return b'{"jsonrpc":"2.0","method":"%s","params":%s}\n' % (method.encode(), params)


class Pipe:
    """The transport as the Intake sees it: only pausing and resuming (and a send for the outbox)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    async def send(self, data: bytes) -> None:
        self.calls.append("send")


class Running:
    """A running request as far as the Intake cares: it can be cancelled."""

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Host:
    """The Session's side: records what the Intake hands it."""

    def __init__(self) -> None:
        self.started: list[tuple[Id | None, Batch | None]] = []
        self.notified: list[str | None] = []
        self.replies: list[bytes] = []
        self.written: list[bytes] = []
        self.jobs = 0
        self.idle = anyio.Event()

    def on_request(self, message: MessageLike, batch: Batch | None) -> None:
        self.started.append((message.id, batch))

    def on_notification(self, message: MessageLike) -> None:
        self.notified.append(message.method)

    def reply(self, frame: bytes, batch: Batch | None) -> None:
        self.replies.append(frame)

    def write(self, frame: bytes) -> None:
        self.written.append(frame)

    def jobs_waiting(self) -> int:
        return self.jobs

    def on_idle(self) -> None:
        self.idle.set()


def _table() -> dict[Id, Any]:
    """The running requests by id (the Session's table; here plain stand-ins)."""
    return {}


def _nothing(*_: Any) -> None:
    return None


async def _sent(frame: bytes) -> None:
    return None


def _intake(
    host: Host, pipe: Pipe, running: dict[Id, Any], *, max_in_flight: int = 2
) -> tuple[Intake, Outbox]:
    outgoing = Outgoing(
        write=host.write,
        send=_sent,
        queue=_nothing,
        notices_waiting=lambda: 0,
        expect_answer=_nothing,
        max_pending=16,
        timeout=None,
    )
    lost: Callable[[BaseException], None] = _nothing
    outbox = Outbox(pipe, lost, _nothing)  # type: ignore[arg-type]
    intake = Intake(
        pipe,  # type: ignore[arg-type]
        outgoing,
        outbox,
        running,
        options=SessionOptions(max_in_flight=max_in_flight),
        batches=True,
        on_request=host.on_request,
        on_notification=host.on_notification,
        reply=host.reply,
        write=host.write,
        jobs_waiting=host.jobs_waiting,
        on_idle=host.on_idle,
    )
    intake.start(asyncio.get_running_loop())
    return intake, outbox


async def test_past_its_bound_what_was_read_waits_in_order_and_reading_pauses() -> None:
    host, pipe, running = Host(), Pipe(), _table()
    intake, _ = _intake(host, pipe, running, max_in_flight=2)
    running.update({100: Running(), 101: Running()})  # the bound is reached: two handlers run
    intake.feed(_request(1) + _notification("notifications/initialized") + _request(2))
    assert host.started == []
    assert host.notified == []
    assert intake.waiting == 3
    assert (intake.reading, pipe.calls) == (False, ["pause"])

    running.clear()  # both handlers finished
    intake.wake()
    with anyio.fail_after(5):
        await host.idle.wait()
    assert host.started == [(1, None), (2, None)]
    assert host.notified == ["notifications/initialized"]
    assert intake.waiting == 0
    assert (intake.reading, pipe.calls) == (True, ["pause", "resume"])


async def test_a_lone_request_with_room_goes_straight_through_and_ping_gets_twice_the_room() -> None:
    host, pipe, running = Host(), Pipe(), _table()
    intake, _ = _intake(host, pipe, running, max_in_flight=1)
    intake.feed(_request(1))
    assert host.started == [(1, None)]
    running[1] = Running()
    intake.feed(_request(2, "ping") + _request(3))
    assert host.started == [(1, None), (2, None)]  # ping went past the bound (up to twice it)
    assert intake.waiting == 1
    assert pipe.calls == ["pause"]


async def test_cancelled_cancels_a_running_request_and_drops_a_waiting_one() -> None:
    host, pipe, running = Host(), Pipe(), _table()
    intake, _ = _intake(host, pipe, running, max_in_flight=1)
    first = Running()
    running[7] = first
    intake.feed(_request(8))  # waits: the one slot is taken
    intake.feed(_notification("notifications/cancelled", b'{"requestId":7}'))
    intake.feed(_notification("notifications/cancelled", b'{"requestId":8}'))
    assert first.cancelled
    running.clear()
    intake.wake()
    with anyio.fail_after(5):
        await host.idle.wait()
    assert host.started == []  # request 8 was dropped unanswered
    assert host.replies == []
    assert host.notified == []  # cancellations are the Intake's own business


async def test_a_rejected_frame_is_answered_through_reply() -> None:
    host, pipe, running = Host(), Pipe(), _table()
    intake, _ = _intake(host, pipe, running)
    intake.feed(b'{"jsonrpc":"2.0","id":5,"method":7}\n')
    assert len(host.replies) == 1
    assert b'"id":5' in host.replies[0]
    assert b'"error"' in host.replies[0]
    assert host.started == []


async def test_notifications_wait_while_the_jobs_are_at_the_bound() -> None:
    host, pipe, running = Host(), Pipe(), _table()
    intake, _ = _intake(host, pipe, running, max_in_flight=1)
    host.jobs = 1  # one notification job not yet taken by the worker: the bound
    intake.feed(_notification("notifications/initialized"))
    assert (host.notified, intake.waiting) == ([], 1)
    host.jobs = 0
    intake.wake()
    with anyio.fail_after(5):
        await host.idle.wait()
    assert (host.notified, intake.waiting) == (["notifications/initialized"], 0)


async def test_halted_it_hands_nothing_more_and_cleared_it_schedules_nothing() -> None:
    host, pipe, running = Host(), Pipe(), _table()
    intake, _ = _intake(host, pipe, running, max_in_flight=1)
    running[1] = Running()
    intake.feed(_request(2))
    intake.halt()
    running.clear()
    intake.wake()
    with anyio.fail_after(5):
        await host.idle.wait()
    assert host.started == []
    assert intake.waiting == 1

    host.idle = anyio.Event()
    intake.clear()
    assert intake.waiting == 0
    intake.wake()  # reading is still paused, but the session is over: no drain is scheduled
    after = anyio.Event()
    asyncio.get_running_loop().call_soon(after.set)  # runs after anything wake() could have scheduled
    with anyio.fail_after(5):
        await after.wait()
    assert not host.idle.is_set()
