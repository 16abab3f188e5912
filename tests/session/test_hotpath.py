"""The Session's fast paths: plain-task handlers and their cancellation, the Outbox, FdTransport.pump."""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.session._support import EAGER_START, Handlers, RawPeer

from mcpframe import core
from mcpframe.session import Request, Session
from mcpframe.transports import FdTransport, MemoryTransport, TransportClosedError, memory_pair

pytestmark = pytest.mark.anyio

CANCEL = "notifications/cancelled"


def cancel_frame(rid: int) -> bytes:
    return core.encode_notification(CANCEL, {"requestId": rid})


class Recorder:
    """A request handler whose methods say what happened to them."""

    def __init__(self) -> None:
        self.ran: list[Any] = []
        self.events: dict[str, anyio.Event] = {}
        self.var: contextvars.ContextVar[int | None] = contextvars.ContextVar("request_var", default=None)

    def event(self, name: str) -> anyio.Event:
        return self.events.setdefault(name, anyio.Event())

    async def __call__(self, req: Request) -> Any:
        self.ran.append(req.id)
        return await getattr(self, "m_" + req.method)(req)

    async def m_echo(self, req: Request) -> Any:
        return req.params

    async def m_ctx(self, req: Request) -> Any:
        before = self.var.get()
        self.var.set(req.params["value"])
        await anyio.sleep(0)
        return {"before": before, "after": self.var.get()}

    async def m_scoped(self, req: Request) -> Any:
        """Suspends inside anyio scopes entered in its first step (fail_after and a task group)."""
        try:
            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(anyio.sleep_forever)
                    self.event("scoped-started").set()
                    await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.event("scoped-cancelled").set()
            raise

    async def m_shielded(self, req: Request) -> Any:
        try:
            with anyio.CancelScope(shield=True):
                self.event("shield-entered").set()
                await self.event("shield-release").wait()
                self.ran.append("shield-finished")
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.event("shielded-cancelled").set()
            raise

    async def m_stubborn(self, req: Request) -> Any:
        """Swallows its cancellation and returns: the answer must still be dropped."""
        try:
            self.event("stubborn-started").set()
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.event("stubborn-cancelled").set()
        return "too late"


@asynccontextmanager
async def hosted(handler: Any) -> AsyncIterator[tuple[RawPeer, Session]]:
    """A Session serving ``handler`` on one end of a memory pair, a ``RawPeer`` on the other, all within 10 s.

    The body closes the session (``await session.aclose()``), which lets the task group end.
    """
    left, right = memory_pair()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            yield RawPeer(left), await serve(handler, right, tg)


async def serve(handler: Any, transport: Any, tg: anyio.abc.TaskGroup) -> Session:
    session = Session(transport, request_handler=handler)
    tg.start_soon(session.run)
    return session


@pytest.mark.parametrize("eager", [False, True])
async def test_a_cancel_in_the_same_chunk(eager: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lazy start: the handler never runs. Eager start: it has already answered; the cancel is harmless.

    Eager start asked for where it is not available (3.11 on the public path) is the lazy start.
    """
    monkeypatch.setattr(Session, "eager_handlers", eager)
    eager = eager and EAGER_START
    rec = Recorder()
    async with hosted(rec) as (peer, session):
        await peer.send(core.encode_request(1, "echo", [1]) + cancel_frame(1))
        await peer.request(2, "echo", [2])
        reply, seen = await peer.until(2)
        assert reply.result == [2]
        if eager:
            assert [(m.id, m.result) for m in seen] == [(1, [1])]
            assert rec.ran == [1, 2]
        else:
            assert seen == []
            assert rec.ran == [2]
        assert session.in_flight == 0
        await session.aclose()


async def test_cancelling_a_handler_suspended_in_anyio_scopes() -> None:
    rec = Recorder()
    async with hosted(rec) as (peer, session):
        await peer.request(1, "scoped")
        await rec.event("scoped-started").wait()
        await peer.send(cancel_frame(1))
        await rec.event("scoped-cancelled").wait()
        await peer.request(2, "echo", ["after"])
        reply, seen = await peer.until(2)
        assert seen == []
        assert reply.result == ["after"]
        assert session.in_flight == 0
        await session.aclose()


async def test_a_shielded_section_finishes_before_the_cancellation_lands() -> None:
    rec = Recorder()
    async with hosted(rec) as (peer, session):
        await peer.request(1, "shielded")
        await rec.event("shield-entered").wait()
        await peer.send(cancel_frame(1))
        await peer.request(2, "echo", ["ping"])
        await peer.until(2)  # the cancel was read; the handler is still shielded
        assert not rec.event("shielded-cancelled").is_set()
        rec.event("shield-release").set()
        await rec.event("shielded-cancelled").wait()
        assert "shield-finished" in rec.ran
        await peer.request(3, "echo", ["ping"])
        _reply, seen = await peer.until(3)
        assert seen == []  # no answer for request 1
        await session.aclose()
    assert session.in_flight == 0


async def test_a_handler_that_swallows_its_cancellation_gets_no_answer() -> None:
    rec = Recorder()
    async with hosted(rec) as (peer, session):
        await peer.request(1, "stubborn")
        await rec.event("stubborn-started").wait()
        await peer.send(cancel_frame(1))
        await rec.event("stubborn-cancelled").wait()
        await peer.request(2, "echo", [2])
        _reply, seen = await peer.until(2)
        assert seen == []
        await session.aclose()


async def test_context_variables_do_not_leak_between_requests() -> None:
    rec = Recorder()
    async with hosted(rec) as (peer, session):
        await peer.send(b"".join(core.encode_request(i, "ctx", {"value": i}) for i in range(1, 4)))
        for i in range(1, 4):
            reply, _ = await peer.until(i)
            assert reply.result == {"before": None, "after": i}
        await session.aclose()


async def test_aclose_waits_for_every_handler_task() -> None:
    rec = Recorder()
    async with hosted(rec) as (peer, session):
        await peer.request(1, "scoped")
        await rec.event("scoped-started").wait()
        task = session._incoming[1]._task
        assert task is not None
        assert not task.done()
        await session.aclose()
        assert task.done()
        assert rec.event("scoped-cancelled").is_set()
        assert session.in_flight == 0


class Trickle:
    """A transport whose ``send_nowait`` takes at most ``take`` bytes; ``send`` takes the rest."""

    def __init__(self, inner: MemoryTransport, take: int) -> None:
        self.inner = inner
        self.take = take
        self.nowait_calls = 0
        self.sends = 0
        self.fail = False

    async def receive(self) -> bytes:
        return await self.inner.receive()

    def send_nowait(self, data: bytes) -> int:
        self.nowait_calls += 1
        if self.fail:
            raise TransportClosedError("gone")
        part = data[: self.take]
        if part:
            self.inner._outgoing.send_nowait(part)
        return len(part)

    async def send(self, data: bytes) -> None:
        self.sends += 1
        await self.inner.send(data)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_partial_nowait_writes_keep_the_byte_order() -> None:
    left, right = memory_pair(max_buffer=10_000)
    trickle = Trickle(right, take=5)
    peer = RawPeer(left)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            session = await serve(Recorder(), trickle, tg)
            for round_ in range(3):
                ids = range(round_ * 50, round_ * 50 + 50)
                await peer.send(b"".join(core.encode_request(i, "echo", {"i": i}) for i in ids))
                for i in ids:
                    reply, _seen = await peer.until(i)
                    assert reply.result == {"i": i}
            assert trickle.nowait_calls > 0
            assert trickle.sends > 0
            await session.aclose()


async def test_a_failing_nowait_write_ends_the_session_cleanly() -> None:
    left, right = memory_pair()
    trickle = Trickle(right, take=0)
    trickle.fail = True
    peer = RawPeer(left)
    with anyio.fail_after(10):
        session = Session(trickle, request_handler=Recorder())
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await peer.request(1, "echo", [1])
        assert session.closed
        assert session.in_flight == 0


async def test_pump_delivers_many_small_chunks_and_frames_split_across_them() -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        transport = FdTransport(in_r, out_w, chunk=13)
        session = Session(transport, request_handler=Recorder())
        requests = b"".join(core.encode_request(i, "echo", {"i": i}) for i in range(200))
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.run)
                view = memoryview(requests)
                while view:
                    await anyio.wait_writable(in_w)
                    view = view[os.write(in_w, view[:4096]) :]
                os.close(in_w)
                in_w = -1
                decoder = core.Decoder()
                got: dict[Any, Any] = {}
                while len(got) < 200:
                    await anyio.wait_readable(out_r)
                    for item in decoder.feed(os.read(out_r, 1 << 16)):
                        got[item.id] = item.result
        assert got == {i: {"i": i} for i in range(200)}
    finally:
        for fd in (in_r, in_w, out_r, out_w):
            if fd >= 0:
                os.close(fd)


async def test_pump_raises_what_the_callback_raises_and_stops_reading() -> None:
    in_r, in_w = os.pipe()
    try:
        transport = FdTransport(in_r, in_w)
        seen: list[bytes] = []

        def callback(data: bytes) -> None:
            seen.append(data)
            raise ValueError("bad chunk")

        os.write(in_w, b"one")
        with anyio.fail_after(10), pytest.raises(ValueError, match="bad chunk"):
            await transport.pump(callback)
        assert seen == [b"one"]
        assert await transport.receive() == b""
        await transport.aclose()
    finally:
        os.close(in_r)
        os.close(in_w)


async def test_receive_reads_ahead_a_bounded_amount_and_keeps_the_order() -> None:
    in_r, in_w = os.pipe()
    try:
        transport = FdTransport(in_r, in_w, chunk=8)
        payload = bytes(range(256)) * 16
        received = b""
        with anyio.fail_after(10):
            os.write(in_w, payload[:2048])
            while len(received) < 2048:
                data = await transport.receive()
                assert 0 < len(data) <= 8 * 4  # at most _READ_AHEAD chunks at a time
                received += data
            os.write(in_w, payload[2048:])
            while len(received) < len(payload):
                received += await transport.receive()
        assert received == payload
        await transport.aclose()
        assert await transport.receive() == b""
    finally:
        os.close(in_r)
        os.close(in_w)


async def test_session_handlers_see_a_closed_peer_as_eof(
    # Handlers from the shared support module still work over the fast paths
) -> None:
    handlers = Handlers()
    left, right = memory_pair()
    peer = RawPeer(left)
    with anyio.fail_after(10):
        session = Session(right, request_handler=handlers)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await peer.request(1, "echo", ["x"])
            reply, _ = await peer.until(1)
            assert reply.result == ["x"]
            await left.aclose()
    assert session.closed
    assert session.in_flight == 0


class Eager(Recorder):
    """Handlers that probe what the eager start must preserve."""

    async def m_identity(self, req: Request) -> Any:
        first = asyncio.current_task()
        await asyncio.sleep(0)  # a bare yield: the host resumes it
        second = asyncio.current_task()
        await anyio.sleep(0.001)  # a timer future
        return {"same": first is second is asyncio.current_task(), "reader": first is self.reader}

    async def m_selfcancel(self, req: Request) -> Any:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # finishes before the cancellation could land: it must not hit another handler
        return "survived"

    async def m_timeout(self, req: Request) -> Any:
        async with asyncio.timeout(0.01):
            await asyncio.sleep(30)

    async def m_sleepy(self, req: Request) -> Any:
        await anyio.sleep(0.001 * (req.params[0] % 3))
        return req.params


async def test_eager_start_keeps_task_identity_and_asyncio_timeouts() -> None:
    rec = Eager()
    async with hosted(rec) as (peer, session):
        rec.reader = asyncio.current_task()  # type: ignore[attr-defined]
        await peer.request(1, "identity")
        reply, _ = await peer.until(1)
        assert reply.result == {"same": True, "reader": False}
        await peer.send(core.encode_request(2, "selfcancel") + core.encode_request(3, "echo", [3]))
        reply2, _ = await peer.until(2)
        assert reply2.result == "survived"
        reply3, _ = await peer.until(3)
        assert reply3.result == [3]
        await peer.request(4, "timeout")
        reply4, _ = await peer.until(4)
        assert reply4.kind == "error"
        assert "TimeoutError" in reply4.error["message"]
        await session.aclose()
    assert session.in_flight == 0


async def test_eager_and_suspending_handlers_mixed_in_one_chunk() -> None:
    rec = Eager()
    async with hosted(rec) as (peer, session):
        await peer.send(b"".join(core.encode_request(i, "sleepy", [i]) for i in range(300)))
        got = {}
        while len(got) < 300:
            item = await peer.receive()
            got[item.id] = item.result
        assert got == {i: [i] for i in range(300)}
        assert session.in_flight == 0
        await session.aclose()


async def test_suspending_handlers_cancelled_in_the_same_chunk_are_really_cancelled() -> None:
    """The cancel reaches each handler's host before the host ran again: the handler must see it.

    Without an eager start the handlers had not run when their cancel was read: they never run at all.
    """
    rec = Recorder()
    async with hosted(rec) as (peer, session):
        await anyio.sleep(0)  # the idle host has started
        frames = [core.encode_request(i, "stubborn") + cancel_frame(i) for i in range(1, 6)]
        await peer.send(b"".join(frames))
        await peer.request(9, "echo", [9])
        reply, seen = await peer.until(9)
        assert reply.result == [9]
        assert seen == []  # no answers for the cancelled ones, not even "too late"
        if EAGER_START:
            await rec.event("stubborn-cancelled").wait()
        else:
            assert rec.ran == [9]
        with anyio.fail_after(5):
            while session.in_flight:
                await anyio.sleep(0.001)
        await session.aclose()


async def test_a_notification_is_handled_before_the_requests_after_it_in_the_same_chunk() -> None:
    seen: list[str] = []

    async def on_notification(message: Any) -> None:
        seen.append(message.method)

    async def handler(req: Request) -> Any:
        return list(seen)

    left, right = memory_pair()
    peer = RawPeer(left)
    with anyio.fail_after(10):
        session = Session(right, request_handler=handler, notification_handler=on_notification)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await peer.send(core.encode_notification("notifications/first") + core.encode_request(1, "probe"))
            reply, _ = await peer.until(1)
            assert reply.result == ["notifications/first"]
            await peer.request(2, "probe")  # no notification pending: the eager path
            reply, _ = await peer.until(2)
            assert reply.result == ["notifications/first"]
            await session.aclose()


async def test_a_long_dispatch_writes_its_first_answers_before_it_ends() -> None:
    left, right = memory_pair(max_buffer=10_000)
    counting = Trickle(right, take=1 << 30)
    peer = RawPeer(left)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            session = await serve(Recorder(), counting, tg)
            await peer.send(b"".join(core.encode_request(i, "echo", [i]) for i in range(1000)))
            got = {}
            while len(got) < 1000:
                item = await peer.receive()
                got[item.id] = item.result
            assert got == {i: [i] for i in range(1000)}
            assert 2 <= counting.nowait_calls <= 20  # in pieces, yet coalesced
            await session.aclose()


async def test_a_finished_request_sends_nothing_related_to_it() -> None:
    """Late sends from a background task of a finished handler are dropped (notifications) or refused
    (requests): a reused Session (an HTTP lane) must not carry them into the next request's answer."""
    left: list[Request] = []

    async def handler(request: Request) -> Any:
        left.append(request)
        return "ok"

    client_t, server_t = memory_pair()
    server = Session(server_t, request_handler=handler)
    client_seen: list[str] = []

    async def on_notification(message: Any) -> None:
        client_seen.append(message.method)

    client = Session(client_t, notification_handler=on_notification)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        tg.start_soon(client.run)
        with anyio.fail_after(5):
            assert await client.request("work") == "ok"
            (finished,) = left
            assert finished.done
            await finished.send_notification("notifications/message", {"level": "info", "data": "late"})
            with pytest.raises(RuntimeError, match="is done"):
                await finished.send_request("sampling/createMessage", {})
            await client.request("work")  # a round trip after the late sends: they would have arrived by now
        assert client_seen == []
        await client.aclose()
        await server.aclose()
        tg.cancel_scope.cancel()
