"""``start_inline`` with ``Session.suspends``: a request whose handler surely suspends starts in a task of its
own, registered at once, so a cancel that comes before that task runs is never lost; the others start
eagerly, as before. These go through ``start_inline`` only; the same rule in the Session's own reader
(``Session._on_request``) is tested through a real Server in ``tests/server/test_stdio_suspends.py``, and a
hook that raises in ``tests/session/test_suspends_raises.py``.

No test here waits for time to pass: handlers wait on events the test sets.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from tests.session.test_inline import Wire, message, running

from mcpframe.session import Request, Session
from mcpframe.session.eager import AVAILABLE as EAGER
from mcpframe.session.inline import start_inline

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Probe:
    """A handler that records where each request ran and can hold it until ``gate`` is set."""

    def __init__(self) -> None:
        self.ran: list[Any] = []
        self.cancelled: list[Any] = []
        self.gate = anyio.Event()
        self.during: list[asyncio.Task[Any] | None] = []  # the task current while each one started

    async def __call__(self, request: Request) -> Any:
        self.ran.append(request.id)
        if request.method == "hold":
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled.append(request.id)
                raise
        return {"echo": request.id}


def by_method(method: str) -> Any:
    def suspends(request: Request) -> bool:
        return request.method == method

    return suspends


async def test_a_suspending_request_starts_in_a_task_of_its_own_and_is_registered_at_once() -> None:
    wire, probe = Wire(), Probe()
    async with running(Session(wire, request_handler=probe)) as session:
        session.suspends = by_method("hold")
        start_inline(session, message(1, "hold"), wire.deliver)
        assert probe.ran == []  # not run in this step: its task runs on the next loop iteration
        request = session._incoming[1]
        assert request._task is not None
        assert not request._started
        with anyio.fail_after(5):
            while probe.ran != [1]:
                await anyio.lowlevel.checkpoint()
            probe.gate.set()
            while 1 in session._incoming:
                await anyio.lowlevel.checkpoint()
        assert [m.id for m in wire.messages()] == [1]


async def test_a_cancel_before_its_task_runs_means_the_handler_never_runs_and_nothing_is_answered() -> None:
    wire, probe = Wire(), Probe()
    async with running(Session(wire, request_handler=probe)) as session:
        session.suspends = by_method("hold")
        start_inline(session, message(2, "hold"), wire.deliver)
        session._intake.cancel({"requestId": 2})  # a client's notifications/cancelled, read at once
        task = session._incoming[2]._task
        assert task is not None
        with anyio.fail_after(5):
            await task
        assert probe.ran == []
        assert probe.cancelled == []
        assert 2 not in session._incoming
        assert wire.log == []


async def test_a_cancel_after_its_task_started_cancels_the_handler_once() -> None:
    wire, probe = Wire(), Probe()
    async with running(Session(wire, request_handler=probe)) as session:
        session.suspends = by_method("hold")
        start_inline(session, message(3, "hold"), wire.deliver)
        task = session._incoming[3]._task
        assert task is not None
        with anyio.fail_after(5):
            while probe.ran != [3]:
                await anyio.lowlevel.checkpoint()
            session._intake.cancel({"requestId": 3})
            await task
        assert probe.cancelled == [3]
        assert 3 not in session._incoming
        assert wire.log == []


@pytest.mark.skipif(not EAGER, reason="no eager start here: every request starts in a task of its own")
async def test_other_requests_still_start_eagerly() -> None:
    wire, probe = Wire(), Probe()
    async with running(Session(wire, request_handler=probe)) as session:
        session.suspends = by_method("hold")
        start_inline(session, message(4, "echo"), wire.deliver)
        assert probe.ran == [4]  # ran (and answered) inside start_inline
        assert [m.id for m in wire.messages()] == [4]


async def test_a_refused_request_is_answered_on_either_path() -> None:
    wire, probe = Wire(), Probe()
    async with running(Session(wire, request_handler=probe)) as session:
        session.suspends = by_method("hold")
        start_inline(session, message(5, "hold"), wire.deliver)
        start_inline(session, message(5, "hold"), wire.deliver)  # its id in flight: refused
        start_inline(session, message(5, "echo"), wire.deliver)  # the same, on the eager path
        with anyio.fail_after(5):
            while len(wire.log) < 2:
                await anyio.lowlevel.checkpoint()
            probe.gate.set()
            while len(wire.log) < 3:
                await anyio.lowlevel.checkpoint()
        got = wire.messages()
        assert [(m.kind, m.id) for m in got] == [("error", 5), ("error", 5), ("result", 5)]
        assert probe.ran == [5]
