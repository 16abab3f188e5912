"""Session over memory_pair: dispatch, concurrency, errors, batches, coalescing, cleanup."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests._blocked import all_blocked
from tests.session._support import Handlers, RawPeer

from mcpframe import core, jsonrpc
from mcpframe.session import ConnectionClosed, JSONRPCError, Session
from mcpframe.transports import MemoryTransport, memory_pair

pytestmark = pytest.mark.anyio


def assert_clean(*sessions: Session) -> None:
    for session in sessions:
        assert session.pending == 0
        assert session.in_flight == 0
        assert session.progress_waiters == 0


@asynccontextmanager
async def served(handlers: Handlers, **options: Any) -> AsyncIterator[tuple[RawPeer, Session]]:
    """A Session with ``handlers`` on one end of a memory pair, the raw peer on the other."""
    left, right = memory_pair()
    session = Session(right, request_handler=handlers, notification_handler=handlers.notification, **options)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        with anyio.fail_after(10):
            yield RawPeer(left), session
        await session.aclose()


@asynccontextmanager
async def connected(handlers: Handlers, **options: Any) -> AsyncIterator[tuple[Session, Session]]:
    """Two Sessions talking to each other; both answer with ``handlers``."""
    left, right = memory_pair()
    client = Session(left, request_handler=handlers, **options)
    server = Session(right, request_handler=handlers, notification_handler=handlers.notification, **options)
    async with client, server:
        with anyio.fail_after(10):
            yield client, server


async def test_echo_round_trip_and_ids() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, _):
        big = 2**70
        for rid in (1, "1", "abc", big, -5):
            await peer.request(rid, "echo", {"n": rid})
            reply, seen = await peer.until(rid)
            assert seen == []
            assert reply.kind == "result"
            assert reply.id == rid
            assert type(reply.id) is type(rid)
            assert reply.result == {"n": rid}


async def test_many_concurrent_requests_between_sessions() -> None:
    handlers = Handlers()
    async with connected(handlers) as (client, server):
        results: dict[int, Any] = {}

        async def call(i: int) -> None:
            results[i] = await client.request("echo", {"i": i})

        async with anyio.create_task_group() as tg:
            for i in range(200):
                tg.start_soon(call, i)
        assert results == {i: {"i": i} for i in range(200)}
        assert_clean(client, server)


async def test_slow_handler_does_not_block_ping() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, session):
        await peer.request(1, "slow")
        await handlers.started_event(1).wait()
        await peer.request(2, "ping")
        reply, seen = await peer.until(2)
        assert reply.result == {}
        assert seen == []
        assert session.in_flight == 1
        handlers.release.set()
        reply, _ = await peer.until(1)
        assert reply.result == "released"
        assert_clean(session)


async def test_cancelled_request_stops_handler_and_gets_no_response() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, session):
        await peer.request(1, "slow")
        await handlers.started_event(1).wait()
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        await handlers.cancelled_event(1).wait()
        await peer.request(2, "ping")
        reply, seen = await peer.until(2)
        assert seen == []
        assert session.in_flight == 0
        # a cancel for an unknown or finished id is harmless
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": True}}
        )
        await peer.request(3, "ping")
        reply, seen = await peer.until(3)
        assert seen == []
        assert reply.result == {}
        assert_clean(session)
    assert not handlers.notifications  # cancellations are handled by the session itself


async def test_requester_cancellation_reaches_the_handler() -> None:
    handlers = Handlers()
    async with connected(handlers) as (client, server):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await client.request("slow")

            tg.start_soon(call)
            await handlers.started_event(1).wait()
            tg.cancel_scope.cancel()
        await handlers.cancelled_event(1).wait()
        assert await client.request("ping") == {}
        assert_clean(client, server)


async def test_handler_errors_become_error_responses() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, session):
        await peer.request(1, "rpcerror")
        reply, _ = await peer.until(1)
        assert reply.error == {"code": -32602, "message": "bad params", "data": {"field": "x"}}
        await peer.request(2, "fail")
        reply, _ = await peer.until(2)
        assert reply.error["code"] == jsonrpc.INTERNAL_ERROR
        assert "secret detail" not in reply.error["message"]
        await peer.request(3, "unencodable")
        reply, _ = await peer.until(3)
        assert reply.error["code"] == jsonrpc.INTERNAL_ERROR
        await peer.request(4, "nope")
        reply, _ = await peer.until(4)
        assert reply.error["code"] == jsonrpc.METHOD_NOT_FOUND
        assert_clean(session)


async def test_request_raises_jsonrpc_error() -> None:
    handlers = Handlers()
    async with connected(handlers) as (client, server):
        with pytest.raises(JSONRPCError) as info:
            await client.request("rpcerror")
        assert info.value.code == -32602
        assert info.value.data == {"field": "x"}
        assert_clean(client, server)


async def test_no_handler_means_method_not_found() -> None:
    left, right = memory_pair()
    peer = RawPeer(left)
    async with Session(right):
        await peer.request(7, "anything")
        reply, _ = await peer.until(7)
        assert reply.error["code"] == jsonrpc.METHOD_NOT_FOUND


async def test_malformed_frames_are_answered_and_the_connection_survives() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, session):
        await peer.send(b"this is not json\n")
        item = await peer.receive()
        assert item.kind == "error"
        assert item.id is None
        assert item.error["code"] == core.PARSE_ERROR
        await peer.send(b'{"jsonrpc":"1.0","id":5,"method":"echo"}\n')
        item = await peer.receive()
        assert item.id == 5
        assert item.error["code"] == core.INVALID_REQUEST
        # an invalid notification is an Invalid Request (JSON-RPC 2.0 section 5): answered, id null
        await peer.send(b'{"jsonrpc":"1.0","method":"notifications/x"}\n')
        await peer.request(6, "ping")
        reply, seen = await peer.until(6)
        assert [(i.kind, i.id, i.error["code"]) for i in seen] == [("error", None, core.INVALID_REQUEST)]
        assert reply.result == {}
        assert_clean(session)


async def test_oversize_frame_is_answered_and_the_next_frame_works() -> None:
    handlers = Handlers()
    async with served(handlers, max_frame=100) as (peer, _):
        await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":"' + b"x" * 200 + b'"}\n')
        item = await peer.receive()
        assert item.kind == "error"
        assert item.error["code"] == core.INVALID_REQUEST
        await peer.request(2, "ping")
        reply, seen = await peer.until(2)
        assert seen == []
        assert reply.result == {}


async def test_past_the_in_flight_limit_a_request_waits_for_room_and_ping_still_gets_through() -> None:
    handlers = Handlers()
    async with served(handlers, max_in_flight=2) as (peer, session):
        await peer.request(1, "slow")
        await peer.request(2, "slow")
        await handlers.started_event(2).wait()
        await peer.send(core.encode_request(3, "echo", {"x": 3}) + core.encode_request("p", "ping"))
        reply, _ = await peer.until("p")  # ping is cheap and proves liveness: it goes past the waiting 3
        assert reply.result == {}
        assert session.backlog == 1
        handlers.release.set()
        reply, _ = await peer.until(3)  # never refused: it ran once a slot was free
        assert reply.result == {"x": 3}
        await peer.request(4, "ping")
        reply, _ = await peer.until(4)
        assert reply.result == {}
        assert_clean(session)


async def test_duplicate_in_flight_id_is_refused() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, _):
        await peer.request(1, "slow")
        await handlers.started_event(1).wait()
        await peer.request(1, "echo", {"x": 1})
        reply, _ = await peer.until(1)
        assert reply.error["code"] == jsonrpc.INVALID_REQUEST
        handlers.release.set()
        reply, _ = await peer.until(1)
        assert reply.result == "released"


async def test_batch_is_answered_with_one_array() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, session):
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"a": 1}},
            {"jsonrpc": "2.0", "method": "notifications/hello"},
            {"jsonrpc": "2.0", "id": "two", "method": "ping"},
            {"jsonrpc": "2.0", "id": 3},
        ]
        await peer.send(batch)
        data = await peer.transport.receive()
        assert data.startswith(b"[")
        assert data.endswith(b"]\n")
        items = core.decode(data)
        assert {item.id: item.kind for item in items} == {1: "result", "two": "result", 3: "error"}
        assert handlers.notifications == [("notifications/hello", None)]
        # a batch of notifications only gets no answer at all
        await peer.send([{"jsonrpc": "2.0", "method": "notifications/a"}])
        await peer.request(9, "ping")
        _, seen = await peer.until(9)
        assert seen == []
        assert_clean(session)


async def test_batches_can_be_refused() -> None:
    handlers = Handlers()
    async with served(handlers, batches=False) as (peer, _):
        await peer.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        item = await peer.receive()
        assert item.kind == "error"
        assert item.id is None
        assert item.error["code"] == core.INVALID_REQUEST


class CountingTransport:
    """Counts the sends of the transport it wraps."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.sends = 0

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def send(self, data: bytes) -> None:
        self.sends += 1
        await self.inner.send(data)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_writes_are_coalesced() -> None:
    handlers = Handlers()
    left, right = memory_pair()
    counting = CountingTransport(right)
    peer = RawPeer(left)
    async with Session(counting, request_handler=handlers):
        await peer.send(b"".join(core.encode_request(i, "echo", [i]) for i in range(100)))
        got = {}
        with anyio.fail_after(10):
            for _ in range(100):
                item = await peer.receive()
                got[item.id] = item.result
        assert got == {i: [i] for i in range(100)}
        assert counting.sends < 10


async def test_notifications_are_delivered_in_order() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, _):
        for i in range(20):
            await peer.send({"jsonrpc": "2.0", "method": "notifications/n", "params": {"i": i}})
        await peer.request(1, "ping")
        await peer.until(1)
        with anyio.fail_after(5):
            while len(handlers.notifications) < 20:
                await all_blocked()
        assert handlers.notifications == [("notifications/n", {"i": i}) for i in range(20)]


async def test_server_to_client_request_while_handling() -> None:
    handlers = Handlers()
    async with connected(handlers) as (client, server):
        assert await client.request("ask", {"q": 1}) == {"asked": {"q": 1}}
        assert_clean(client, server)


async def test_disconnect_fails_pending_requests_and_cleans_up() -> None:
    handlers = Handlers()
    left, right = memory_pair()
    client = Session(left)
    peer = RawPeer(right)
    async with client:
        async with anyio.create_task_group() as tg:
            outcome: list[BaseException] = []

            async def call() -> None:
                try:
                    await client.request("slow")
                except ConnectionClosed as exc:
                    outcome.append(exc)

            tg.start_soon(call)
            item = await peer.receive()
            assert item.method == "slow"
            await right.aclose()
        assert len(outcome) == 1
        assert_clean(client)
        with pytest.raises(ConnectionClosed):
            await client.request("ping")
    assert client.closed
    assert handlers.notifications == []


async def test_eof_lets_running_handlers_answer() -> None:
    handlers = Handlers()
    handlers.release.set()
    left, right = memory_pair()
    session = Session(right, request_handler=handlers)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        await left.send(core.encode_request(1, "echo", {"x": 1}))
        await left.send(core.encode_request(2, "slow"))
        # closing only our sending side is not possible with memory streams, so read as we go
        peer = RawPeer(left)
        got = {}
        for _ in range(2):
            item = await peer.receive()
            got[item.id] = item.result
        assert got == {1: {"x": 1}, 2: "released"}
        await left.aclose()
    assert session.closed
    assert_clean(session)


async def test_aclose_cancels_handlers_and_is_idempotent() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, session):
        await peer.request(1, "slow")
        await handlers.started_event(1).wait()
        await session.aclose()
        await session.aclose()
        assert handlers.cancelled_event(1).is_set()
        assert_clean(session)
        with pytest.raises(EOFError):
            await peer.receive()


async def test_cancelled_batch_member_is_left_out_of_the_batch_answer() -> None:
    handlers = Handlers()
    async with served(handlers) as (peer, session):
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "slow"},
            {"jsonrpc": "2.0", "id": 2, "method": "echo", "params": {"b": 2}},
        ]
        await peer.send(batch)
        await handlers.started_event(1).wait()
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        data = await peer.transport.receive()
        items = core.decode(data)
        assert data.startswith(b"[")
        assert [(item.id, item.result) for item in items] == [(2, {"b": 2})]
        assert_clean(session)
