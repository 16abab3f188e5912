"""``answer_inline``'s ``deliver`` may be a plain function: ``None`` back means the frame was taken at once.

A host that hands most answers over synchronously need not make a coroutine per answer; one that must wait
returns an awaitable, which is awaited before the answer counts as delivered. Both kinds see the same
frames in the same order as an ``async def`` deliver: answers given at once, after suspending, refusals,
and an answer that waits for what the handler sent before it.
"""

from __future__ import annotations

from collections.abc import Awaitable

import anyio
import anyio.lowlevel
import pytest
from tests.session.test_inline import NOTE, Handler, Wire, message, running, shape

from mcpframe import jsonrpc
from mcpframe._api import Id
from mcpframe.session import Session
from mcpframe.session.inline import answer_inline

pytestmark = pytest.mark.anyio


class SyncWire(Wire):
    """`Wire` whose deliver is a plain function, counting its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def deliver_now(self, rid: Id, frame: bytes) -> None:
        self.calls += 1
        assert not frame.endswith(b"\n")
        self.log.append(frame + b"\n")


async def test_a_plain_deliver_takes_answers_refusals_late_answers_and_notes_in_order() -> None:
    wire, handler = SyncWire(), Handler()
    async with running(Session(wire, request_handler=handler)) as session:
        with anyio.fail_after(5):
            await answer_inline(session, message(1, "echo", "now"), wire.deliver_now)
            async with anyio.create_task_group() as tg:
                tg.start_soon(answer_inline, session, message(2, "hold", "late"), wire.deliver_now)
                while 2 not in session._incoming:
                    await anyio.lowlevel.checkpoint()
                await answer_inline(session, message(2, "echo"), wire.deliver_now)  # its id is in flight
                await answer_inline(session, message(3, "refuse"), wire.deliver_now)
                handler.gate.set()
            await answer_inline(session, message(4, "note", "queued"), wire.deliver_now)  # the note first
    assert [shape(item) for item in wire.messages()] == [
        ("result", 1, {"echo": "now"}),
        ("error", 2, jsonrpc.INVALID_REQUEST),
        ("error", 3, jsonrpc.INVALID_PARAMS),
        ("result", 2, {"echo": "late"}),
        ("note", NOTE, "queued"),
        ("result", 4, {"echo": "queued"}),
    ]
    assert wire.calls == 5


async def test_an_awaitable_a_deliver_returns_is_awaited_before_the_answer_counts_as_delivered() -> None:
    wire = Wire()
    taken = anyio.Event()
    finished: list[bytes] = []

    async def finish(frame: bytes) -> None:
        await taken.wait()
        finished.append(frame)

    def deliver(rid: Id, frame: bytes) -> Awaitable[None]:
        return finish(frame)

    async with running(Session(wire, request_handler=Handler())) as session:
        done = anyio.Event()

        async def answer() -> None:
            await answer_inline(session, message(5, "echo", "w"), deliver)
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer)
            for _ in range(20):  # a few loop turns: the answer waits on its awaitable meanwhile
                await anyio.lowlevel.checkpoint()
            assert not done.is_set()
            assert finished == []
            taken.set()
    assert done.is_set()
    assert len(finished) == 1
    assert b'"echo":"w"' in finished[0]
