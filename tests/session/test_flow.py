"""Flow control: back-pressure instead of refusals, a bounded outbox, what goes past the backlog.

Everything runs over a memory pair whose server end records the Session's ``pause_reading`` /
``resume_reading`` calls, so the tests assert on the pause itself, never on time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.session._support import RawPeer

from mcpframe import core, jsonrpc
from mcpframe.session import Request, Session
from mcpframe.transports import MemoryTransport, memory_pair

pytestmark = pytest.mark.anyio


class Recording:
    """A MemoryTransport that remembers the Session's flow-control calls and the outbox at each write."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.session: Session | None = None
        self.pauses = 0
        self.resumes = 0
        self.paused = anyio.Event()
        self.outbox_peak = 0

    def _note(self) -> None:
        if self.session is not None:
            self.outbox_peak = max(self.outbox_peak, self.session.outbox_bytes)

    async def receive(self) -> bytes:
        return await self.inner.receive()

    def send_nowait(self, data: bytes) -> int:
        self._note()
        return self.inner.send_nowait(data)

    async def send(self, data: bytes) -> None:
        self._note()
        await self.inner.send(data)

    def pause_reading(self) -> None:
        self._note()
        self.pauses += 1
        self.paused.set()
        self.inner.pause_reading()

    def resume_reading(self) -> None:
        self.resumes += 1
        self.inner.resume_reading()

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def hosted(
    handler: Any, limit: float = 30, **options: Any
) -> AsyncIterator[tuple[RawPeer, Session, Recording]]:
    left, right = memory_pair()
    transport = Recording(right)
    session = Session(transport, request_handler=handler, **options)
    transport.session = session
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        with anyio.fail_after(limit):
            yield RawPeer(left), session, transport
        await session.aclose()


def requests(first: int, count: int, method: str = "work", params: Any = None) -> bytes:
    return b"".join(core.encode_request(rid, method, params) for rid in range(first, first + count))


async def collect(peer: RawPeer, count: int) -> dict[Any, Any]:
    """Read ``count`` responses: id -> the response."""
    answers: dict[Any, Any] = {}
    while len(answers) < count:
        item = await peer.receive()
        assert item.id not in answers, f"answered twice: {item.id!r}"
        answers[item.id] = item
    return answers


async def test_20000_pipelined_requests_to_a_slow_handler_are_all_answered() -> None:
    gate = anyio.Event()
    running = 0
    most = 0

    async def handler(req: Request) -> Any:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            await gate.wait()  # slower than the reader until the test opens the gate
            return {"n": req.id}
        finally:
            running -= 1

    total, chunk = 20_000, 500
    async with hosted(handler, max_in_flight=64) as (peer, session, transport):

        async def write_all() -> None:
            for first in range(0, total, chunk):
                await peer.send(requests(first, chunk))

        async with anyio.create_task_group() as tg:
            tg.start_soon(write_all)
            await transport.paused.wait()  # the bound was reached: the server stopped reading
            assert session.in_flight == 64
            assert session.backlog > 0
            gate.set()
            answers = await collect(peer, total)
        assert most == 64
        assert sorted(answers) == list(range(total))
        assert all(answer.kind == "result" and answer.result == {"n": rid} for rid, answer in answers.items())
        assert transport.resumes >= 1
        assert session.backlog == 0
        assert session.in_flight == 0


async def test_a_backlogged_request_can_be_cancelled_and_is_never_answered() -> None:
    release = anyio.Event()
    ran: list[Any] = []

    async def handler(req: Request) -> Any:
        ran.append(req.id)
        if req.method == "slow":
            await release.wait()
        return req.method

    async with hosted(handler, max_in_flight=1) as (peer, session, _):
        chunk = (
            core.encode_request(1, "slow")
            + core.encode_request(2, "echo")
            + core.encode_notification("notifications/cancelled", {"requestId": 2})
            + core.encode_request(3, "echo")
        )
        await peer.send(chunk)
        while session.backlog != 2:  # 2 and 3 wait behind 1; the cancellation went past them
            await anyio.sleep(0)
        release.set()
        answers = [await peer.receive(), await peer.receive()]
        await peer.request(4, "echo")
        answers.append(await peer.receive())
        assert [(a.id, a.result) for a in answers] == [(1, "slow"), (3, "echo"), (4, "echo")]
        assert ran == [1, 3, 4]


async def test_the_peers_answer_goes_past_the_backlog_so_a_waiting_handler_finishes() -> None:
    async def handler(req: Request) -> Any:
        if req.method == "ask":
            return await req.send_request("question", {"q": 1})
        return "plain"

    async with hosted(handler, max_in_flight=1) as (peer, _, _):
        await peer.request(1, "ask")
        question = await peer.receive()
        assert question.method == "question"
        # the next request finds no room; our answer, in the same chunk behind it, must still get through
        await peer.send(core.encode_request(2, "echo") + core.encode_result(question.id, {"a": 42}))
        answers = await collect(peer, 2)
        assert answers[1].result == {"a": 42}
        assert answers[2].result == "plain"


async def test_reading_goes_on_while_a_handler_waits_for_the_peer() -> None:
    async def handler(req: Request) -> Any:
        if req.method == "ask":
            return await req.send_request("question")
        return "plain"

    async with hosted(handler, max_in_flight=1) as (peer, session, _):
        await peer.send(core.encode_request(1, "ask") + core.encode_request(2, "echo"))
        question = await peer.receive()
        assert session.backlog == 1
        await peer.send(core.encode_result(question.id, "answer"))  # a later chunk: it is read all the same
        answers = await collect(peer, 2)
        assert (answers[1].result, answers[2].result) == ("answer", "plain")


async def test_a_peer_that_does_not_read_keeps_the_outbox_under_its_mark_and_loses_nothing() -> None:
    async def handler(req: Request) -> Any:
        return req.params

    high = 64 * 1024
    payload = {"pad": "x" * 100}
    frame = len(core.encode_result(19_999, payload))
    total, chunk = 20_000, 250
    async with hosted(handler, outbox_high_water=high) as (peer, session, transport):

        async def write_all() -> None:
            for first in range(0, total, chunk):
                await peer.send(requests(first, chunk, "echo", payload))

        async with anyio.create_task_group() as tg:
            tg.start_soon(write_all)
            await transport.paused.wait()  # our answers are not read: the server stopped reading
            assert session.backlog > 0
            ids = [(await peer.receive()).id for _ in range(total)]  # the peer reads at last
        assert ids == list(range(total))  # every answer, in order
        assert transport.outbox_peak <= high + frame
        assert session.outbox_bytes == 0


async def test_notifications_wait_in_order_behind_backlogged_requests() -> None:
    release = anyio.Event()
    seen: list[Any] = []

    async def handler(req: Request) -> Any:
        seen.append(("request", req.id))
        if req.method == "slow":
            await release.wait()
        return None

    left, right = memory_pair()

    async def note(message: Any) -> None:
        seen.append(("note", message.params["n"]))

    session = Session(right, request_handler=handler, notification_handler=note, max_in_flight=1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        peer = RawPeer(left)
        with anyio.fail_after(30):
            await peer.send(
                core.encode_request(1, "slow")
                + core.encode_request(2, "echo")
                + core.encode_notification("note", {"n": 1})
            )
            while session.backlog != 2:
                await anyio.sleep(0)
            release.set()
            await collect(peer, 2)
            await peer.request(3, "echo")
            await collect(peer, 1)
        await session.aclose()
    assert seen[:3] == [("request", 1), ("request", 2), ("note", 1)]


async def test_ping_goes_past_the_backlog_while_there_is_room_for_it() -> None:
    release = anyio.Event()

    async def handler(req: Request) -> Any:
        if req.method == "slow":
            await release.wait()
        return {}

    async with hosted(handler, max_in_flight=1) as (peer, session, _):
        await peer.send(
            core.encode_request(1, "slow") + core.encode_request(2, "echo") + core.encode_request("p", "ping")
        )
        answer = await peer.receive()  # what is not read yet waits in the pipe; a ping in hand goes past
        assert session.backlog == 1
        assert (answer.id, answer.result) == ("p", {})
        release.set()
        answers = await collect(peer, 2)
        assert answers[2].kind == "result"


async def test_a_refused_batch_gets_one_error_with_a_null_id_and_the_session_goes_on() -> None:
    async def handler(req: Request) -> Any:
        return req.method

    async with hosted(handler, batches=False) as (peer, session, _):
        batch = (
            b"[" + core.encode_request(1, "a").rstrip() + b"," + core.encode_request(2, "b").rstrip() + b"]\n"
        )
        await peer.send(batch + core.encode_request(3, "c"))
        refusal = await peer.receive()
        assert refusal.kind == "error"
        assert refusal.id is None
        assert refusal.error == {
            "code": jsonrpc.INVALID_REQUEST,
            "message": "Invalid Request: batches are not supported",
        }
        answer = await peer.receive()
        assert (answer.id, answer.result) == (3, "c")
        session.batches = True  # settable: an MCP server sets it once the revision is negotiated
        await peer.send(batch)
        answers = await peer.receive()
        second = await peer.receive()
        assert sorted([(answers.id, answers.batch), (second.id, second.batch)]) == [(1, 0), (2, 1)]


class _Scripted:
    """A transport that delivers ``chunks``, then EOF (its write side stays open), and keeps what is sent."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)
        self.sent: list[bytes] = []
        self.eof = anyio.Event()

    async def receive(self) -> bytes:
        if self.chunks:
            return self.chunks.pop(0)
        self.eof.set()
        return b""

    async def send(self, data: bytes) -> None:
        self.sent.append(data)

    async def aclose(self) -> None:
        pass


async def test_notifications_waiting_in_the_backlog_at_eof_are_still_delivered() -> None:
    """A handler waiting on the peer keeps reading on, so EOF can arrive while a request and a notification
    wait in the backlog: the request is still answered and the notification still delivered."""
    seen: list[str] = []

    async def handler(request: Request) -> Any:
        return await request.session.request("peer/question")  # fails at EOF: the peer will never answer

    async def note(message: Any) -> None:
        seen.append(message.method)

    transport = _Scripted(
        core.encode_request(1, "ask"),
        core.encode_request(2, "ask") + core.encode_notification("n/important"),
    )
    session = Session(transport, request_handler=handler, notification_handler=note, max_in_flight=1)
    with anyio.fail_after(10):
        await session.run()
    assert seen == ["n/important"]
    frames = [item for chunk in transport.sent for item in core.Decoder().feed(chunk)]
    assert sorted(m.id for m in frames if m.kind == "error") == [1, 2]


async def test_answers_to_our_requests_in_a_batch_go_past_the_backlog() -> None:
    """A handler waits on the peer while the next request waits in the backlog; the peer answers in a
    (2025-03-26) batch: the answer reaches the handler at once instead of waiting behind the backlog."""
    left, right = memory_pair()
    peer = RawPeer(left)

    async def handler(request: Request) -> Any:
        return await request.session.request("peer/question")

    async with Session(right, request_handler=handler, max_in_flight=1) as session:
        with anyio.fail_after(10):
            await peer.send(core.encode_request(1, "ask") + core.encode_request(2, "ask"))
            first = await peer.receive()
            assert (first.kind, first.method) == ("request", "peer/question")
            await peer.send([{"jsonrpc": "2.0", "id": first.id, "result": "one"}])
            answer, _ = await peer.until(1)
            assert answer.result == "one"
            second = await peer.receive()  # request 2 started only now, and asks in turn
            assert second.method == "peer/question"
            await peer.send(core.encode_result(second.id, "two"))
            answer, _ = await peer.until(2)
            assert answer.result == "two"
        assert session.backlog == 0


async def test_a_cancelled_request_in_a_refused_batch_does_not_swallow_a_later_one_with_its_id() -> None:
    left, right = memory_pair()
    peer = RawPeer(left)
    gate = anyio.Event()

    async def handler(request: Request) -> Any:
        if request.method == "block":
            await gate.wait()
        return request.method

    async with Session(right, request_handler=handler, max_in_flight=1, batches=False):
        with anyio.fail_after(10):
            await peer.send(
                core.encode_request(1, "block")
                + b'[{"jsonrpc":"2.0","id":7,"method":"x"}]\n'
                + core.encode_notification("notifications/cancelled", {"requestId": 7})
            )
            gate.set()
            answer, _ = await peer.until(1)
            refusal = await peer.receive()  # the batch: refused as a whole, id null
            assert (refusal.id, refusal.error["code"]) == (None, jsonrpc.INVALID_REQUEST)
            await peer.request(7, "fresh")
            answer, _ = await peer.until(7)
    assert answer.result == "fresh"


async def test_a_batch_past_the_cap_while_we_wait_on_the_peer_is_answered_busy_at_once() -> None:
    """Reading goes on while a handler waits on the peer; a batch that then finds the backlog at its cap is
    answered at once, as one array of "Server busy" errors, instead of growing the backlog."""
    left, right = memory_pair()
    peer = RawPeer(left)

    async def handler(request: Request) -> Any:
        return await request.session.request("peer/question")

    batch = [
        {"jsonrpc": "2.0", "id": 3, "method": "ask"},
        {"jsonrpc": "2.0", "method": "n/ignored"},
        {"jsonrpc": "2.0", "id": 4, "method": "ask"},
    ]
    async with Session(right, request_handler=handler, max_in_flight=1) as session:
        with anyio.fail_after(10):
            await peer.send(core.encode_request(1, "ask") + core.encode_request(2, "ask"))
            question = await peer.receive()  # request 1 waits on us; request 2 waits in the backlog
            await peer.send(batch)
            busy = [await peer.receive(), await peer.receive()]
            assert [(m.id, m.batch, m.error["code"]) for m in busy] == [(3, 0, -32603), (4, 1, -32603)]
            assert session.backlog == 1
            await peer.send(core.encode_result(question.id, "one"))
            answer, _ = await peer.until(1)
            assert answer.result == "one"
