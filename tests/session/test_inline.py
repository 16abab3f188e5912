"""``answer_inline``: a request answered outside the Session's reader (what Streamable HTTP does per POST).

What the handler sent goes out before its answer whether or not the Session's outbox is still busy; every
frame handed to ``deliver`` is one whole message without its newline (so the host's framing is right), for
the answers the handler gives and for the refusals and internal errors ``answer_inline`` makes itself; a
handler that refuses synchronously (before returning its awaitable, as ``ServerConnection.handle_request``
does) is answered with its error and the Session goes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pytest
from tests.session._support import RawPeer

from mcpframe import core, jsonrpc
from mcpframe._api import Id
from mcpframe.session import JSONRPCError, Request, Session
from mcpframe.session.inline import answer_inline
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio

NOTE = "notifications/message"


class Wire:
    """A transport that records every write beside the frames the test delivers, in one ordered log.

    With ``hold`` set, a write waits for ``release`` (the Session's writer is busy meanwhile).
    """

    def __init__(self, *, hold: bool = False) -> None:
        self.log: list[bytes] = []
        self.sending = anyio.Event()
        self.release = anyio.Event()
        if not hold:
            self.release.set()
        self._closed = anyio.Event()

    async def receive(self) -> bytes:
        await self._closed.wait()
        return b""

    async def send(self, data: bytes) -> None:
        self.sending.set()
        await self.release.wait()
        self.log.extend(line + b"\n" for line in data.splitlines())

    async def aclose(self) -> None:
        self._closed.set()

    async def deliver(self, rid: Id, frame: bytes) -> None:
        """What a host does with an inline answer: the frame, then its newline."""
        assert not frame.endswith(b"\n")
        self.log.append(frame + b"\n")

    def messages(self) -> list[Any]:
        """The log decoded as one stream: any frame boundary out of place shows as a wrong count or error."""
        return core.Decoder().feed(b"".join(self.log))


def message(rid: Id, method: str, value: Any = None) -> Any:
    """The decoded request ``method`` with ``params`` ``{"v": value}``."""
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"v": value}}
    (decoded,) = core.Decoder().feed(orjson.dumps(body) + b"\n")
    return decoded


@asynccontextmanager
async def running(session: Session) -> AsyncIterator[Session]:
    """``session`` running in the background, its writer task started (a lane the HTTP host reuses)."""
    async with session:
        with anyio.fail_after(5):
            while session._outbox._loop is None:  # set by the writer's first step
                await anyio.lowlevel.checkpoint()
        yield session


class Handler:
    """A request handler like ``ServerConnection.handle_request``: some methods it refuses synchronously."""

    def __init__(self) -> None:
        self.gate = anyio.Event()  # what ``hold`` waits for
        self.busy_on_return: bool | None = None  # whether the Session was still writing when it returned

    def __call__(self, request: Request) -> Awaitable[Any]:
        if request.method == "refuse":
            raise JSONRPCError(jsonrpc.INVALID_PARAMS, "unknown tool 'nope'")
        if request.method == "broken":
            raise ValueError("a bug before any await")
        return self._answer(request)

    async def _answer(self, request: Request) -> Any:
        value = request.params["v"]
        if request.method == "hold":
            await self.gate.wait()
        if request.method == "note":
            await request.session.notify(NOTE, {"data": value})
            if value == "idle":  # wait until the note is written: the outbox is idle on return
                while request.session._outbox.busy:
                    await anyio.lowlevel.checkpoint()
        self.busy_on_return = request.session._outbox.busy
        return {"echo": value}


def shape(item: Any) -> tuple[Any, ...]:
    if item.kind == "notification":
        return ("note", item.method, item.params["data"])
    if item.kind == "error":
        return ("error", item.id, item.error["code"])
    return ("result", item.id, item.result)


@pytest.mark.parametrize("state", ["queued", "idle"])
async def test_a_note_the_handler_sent_goes_before_its_inline_answer(state: str) -> None:
    wire, handler = Wire(), Handler()
    async with running(Session(wire, request_handler=handler)) as session:
        with anyio.fail_after(5):
            await answer_inline(session, message(1, "note", state), wire.deliver)
        assert handler.busy_on_return is (state == "queued")
        assert not session._outbox.busy
    assert [shape(item) for item in wire.messages()] == [
        ("note", NOTE, state),
        ("result", 1, {"echo": state}),
    ]


async def test_an_inline_answer_waits_for_a_note_still_being_written() -> None:
    wire = Wire(hold=True)
    session = Session(wire, request_handler=Handler())
    async with running(session), anyio.create_task_group() as tg:
        tg.start_soon(answer_inline, session, message(1, "note", "held"), wire.deliver)
        with anyio.fail_after(5):
            await wire.sending.wait()  # the Session's writer holds the note
        assert session._outbox.busy
        assert wire.log == []  # the answer was not delivered ahead of it
        wire.release.set()
    assert [shape(item) for item in wire.messages()] == [
        ("note", NOTE, "held"),
        ("result", 1, {"echo": "held"}),
    ]


async def test_synchronous_refusals_are_answered_whole_and_the_session_goes_on() -> None:
    wire = Wire()
    async with running(Session(wire, request_handler=Handler())) as session:
        with anyio.fail_after(5):
            await answer_inline(session, message(1, "refuse"), wire.deliver)
            await answer_inline(session, message(2, "broken"), wire.deliver)
            await answer_inline(session, message("3", "echo", [1]), wire.deliver)
    assert [shape(item) for item in wire.messages()] == [
        ("error", 1, jsonrpc.INVALID_PARAMS),
        ("error", 2, jsonrpc.INTERNAL_ERROR),
        ("result", "3", {"echo": [1]}),
    ]
    assert wire.messages()[0].error["message"] == "unknown tool 'nope'"


class Unreadable:
    """A decoded request whose params cannot be read: ``Request`` cannot be made from it."""

    kind = "request"
    method = "echo"
    result = error = raw_id = raw_params = raw_result = None
    raw = b""

    def __init__(self, rid: Id) -> None:
        self.id = rid

    @property
    def params(self) -> Any:
        raise RuntimeError("unreadable")


async def test_refusals_and_internal_errors_made_inline_are_delivered_whole() -> None:
    wire, handler = Wire(), Handler()
    async with running(Session(wire, request_handler=handler)) as session:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(answer_inline, session, message(7, "hold", "late"), wire.deliver)
                while 7 not in session._incoming:
                    await anyio.lowlevel.checkpoint()
                await answer_inline(session, message(7, "echo"), wire.deliver)  # its id is in flight
                handler.gate.set()
            await answer_inline(session, Unreadable(8), wire.deliver)  # type: ignore[arg-type]
    async with running(Session(Wire())) as bare:  # no request handler
        with anyio.fail_after(5):
            await answer_inline(bare, message(9, "echo"), wire.deliver)
    assert [shape(item) for item in wire.messages()] == [
        ("error", 7, jsonrpc.INVALID_REQUEST),
        ("result", 7, {"echo": "late"}),
        ("error", 8, jsonrpc.INTERNAL_ERROR),
        ("error", 9, jsonrpc.METHOD_NOT_FOUND),
    ]
    assert all(frame.count(b"\n") == 1 for frame in wire.log)


async def test_the_reader_answers_a_synchronous_refusal_and_goes_on() -> None:
    near, far = memory_pair()
    peer = RawPeer(near)
    async with running(Session(far, request_handler=Handler())):
        with anyio.fail_after(5):
            await peer.request(1, "refuse", {"v": 1})
            await peer.request(2, "broken", {"v": 2})
            await peer.request(3, "echo", {"v": 1})
            answers = [await peer.receive() for _ in range(3)]
    assert sorted(map(shape, answers), key=lambda item: item[1]) == [
        ("error", 1, jsonrpc.INVALID_PARAMS),
        ("error", 2, jsonrpc.INTERNAL_ERROR),
        ("result", 3, {"echo": 1}),
    ]
