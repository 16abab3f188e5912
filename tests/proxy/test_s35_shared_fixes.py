"""Fixes to `--multiplex shared` found in review (session 35): every POST of a session ends, even when its
answer is dropped (its admission slot is freed); a client answers only the child's requests put to its own
session; an error on the way to the child leaves no id mapped; one idle timer at a time.

The bridge is driven here directly over a stand-in of `SharedUpstream` (what it asks of it alone), so each
test states the exact step that must end a POST."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from mcpframe import core
from mcpframe.proxy.listen_bridge import Route
from mcpframe.proxy.listen_shared import SharedUpstream
from mcpframe.proxy.listen_shared_session import HANDSHAKE_ID, SharedBridge

pytestmark = pytest.mark.anyio


class _Stream:
    """A POST's stream: records what is written and whether it ended."""

    def __init__(self, *, stuck: bool = False) -> None:
        self.sent: list[bytes] = []
        self.finished = False
        self.stuck = stuck  # its client never reads: `emit` waits forever

    async def emit(self, frame: bytes, *, response: bool = False, wait: bool = True) -> None:
        if self.stuck:
            await anyio.sleep_forever()
        self.sent.append(frame)

    def finish(self) -> None:
        self.finished = True

    def drop_unsent(self) -> None:
        pass


class _Upstream:
    """What `SharedBridge` asks of `SharedUpstream` in these tests."""

    def __init__(self, max_unread: int = 1 << 20, max_pending: int = 65536) -> None:
        self.max_unread = max_unread
        self.cut_sessions = 0
        self.spawned: list[Any] = []
        self.result = None
        self.child = None
        self.asked: dict[Any, SharedBridge] = {}  # the child's request id -> the session asked
        self.ids = core.IdMap(max_pending=max_pending)
        self.tokens: dict[int, Any] = {}
        self.written: list[bytes] = []
        self.writable = True

    def active(self, bridge: SharedBridge) -> None:
        pass

    async def ready(self) -> None:
        pass

    async def write(self, data: bytes) -> bool:
        if self.writable:
            self.written.append(data)
        return self.writable

    def spawn(self, func: Any, *args: Any) -> None:
        self.spawned.append(func)


def _route(stream: _Stream, rid: int, released: list[int]) -> Route:
    route = Route(stream, [rid], [])  # type: ignore[arg-type]  # the stand-in stream
    route.on_close.append(lambda: released.append(rid))  # what `BridgePosts` hangs the slot's release on
    return route


def _bridge(upstream: _Upstream) -> SharedBridge:
    return SharedBridge(upstream, max_frame=1 << 20)  # type: ignore[arg-type]  # the stand-in upstream


async def test_answers_queued_when_the_session_is_cut_end_their_posts() -> None:
    bridge = _bridge(_Upstream())
    released: list[int] = []
    stream = _Stream()
    routes = {rid: _route(stream, rid, released) for rid in (1, 2, 3)}
    bridge.pending.update(routes)
    bridge.deliver(stream, b"note", response=False)  # something queued first: the answers queue behind it
    await bridge.answer_with(1, b'{"jsonrpc":"2.0","id":1,"result":{}}')
    await bridge.answer_with(2, b'{"jsonrpc":"2.0","id":2,"result":{}}')
    assert released == []  # queued, not written yet
    bridge._cut_off()
    assert sorted(released) == [1, 2]  # both dropped answers ended their POSTs
    assert routes[1].closed
    assert routes[2].closed
    assert not routes[3].closed  # still in `pending`: `_end_cut` answers it with an error


async def test_an_answer_delivered_to_a_cut_or_ended_session_ends_its_post() -> None:
    for how in ("cut", "ended"):
        bridge = _bridge(_Upstream())
        released: list[int] = []
        stream = _Stream()
        route = _route(stream, 7, released)
        if how == "cut":
            bridge.cut = "cut"
        else:
            bridge.ended = True
        bridge.deliver(stream, b"answer", response=True, route=route, rid=7)
        assert released == [7], how
        assert not bridge.outbox


async def test_an_answer_that_overflows_the_bound_ends_its_post() -> None:
    upstream = _Upstream(max_unread=0)
    bridge = _bridge(upstream)
    released: list[int] = []
    stream = _Stream()
    bridge.deliver(stream, b"note", response=False)  # now over the bound of 0 bytes
    route = _route(stream, 4, released)
    bridge.deliver(stream, b"answer", response=True, route=route, rid=4)
    assert upstream.cut_sessions == 1
    assert released == [4]


async def test_answers_queued_or_being_written_when_the_session_ends_end_their_posts() -> None:
    bridge = _bridge(_Upstream())
    released: list[int] = []
    stuck = _Stream(stuck=True)
    first, second = _route(stuck, 1, released), _route(stuck, 2, released)
    bridge.deliver(stuck, b"a1", response=True, route=first, rid=1)
    bridge.deliver(stuck, b"a2", response=True, route=second, rid=2)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(bridge._drain)
            while len(bridge.outbox) == 2:  # `_drain` takes the first and waits on its client
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()  # what `run` does once the host closed the session
    assert released == [1]  # the one being written
    bridge.ended = True
    bridge._drop_queued()  # what `run`'s `finally` does next
    assert sorted(released) == [1, 2]


async def test_a_session_cannot_answer_the_childs_request_to_another_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream = _Upstream()
    a, b = _bridge(upstream), _bridge(upstream)
    upstream.asked["mcp-ask-1"] = a  # the child asked session A
    forged = b'{"jsonrpc":"2.0","id":"mcp-ask-1","result":{"action":"accept"}}'
    with caplog.at_level("WARNING", logger="mcpframe.proxy"):
        assert b.outgoing(core.decode(forged)) == b""  # B's answer does not reach the child
    assert upstream.asked == {"mcp-ask-1": a}  # A may still answer
    assert b.stray_answers == 1
    assert "dropping a response to 'mcp-ask-1'" in caplog.text
    assert b.outgoing(core.decode(b'{"jsonrpc":"2.0","id":99,"result":{}}')) == b""  # asked of nobody
    honest = b'{"jsonrpc":"2.0","id":"mcp-ask-1","result":{"action":"decline"}}'
    assert a.outgoing(core.decode(honest)) == honest + b"\n"
    assert upstream.asked == {}


def _requests(*rids: int) -> list[Any]:
    meta = b',"params":{"_meta":{"progressToken":"t%d"}}'
    return [
        core.decode(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call"%s}' % (r, meta % r))[0] for r in rids
    ]


async def test_requests_refused_by_the_id_map_are_answered_with_an_error() -> None:
    upstream = _Upstream(max_pending=2)
    bridge = _bridge(upstream)
    released: list[int] = []
    stream = _Stream()
    upstream.ids.outbound(bridge.conn, 5)  # request 5 of this session is in flight already
    requests = _requests(5, 6, 7)
    route = Route(stream, [5, 6, 7], [])  # type: ignore[arg-type]
    route.on_close.append(lambda: released.append(0))
    bridge.add(route, requests)
    assert await bridge.send(route, requests)
    errors = {json.loads(frame)["id"]: json.loads(frame)["error"] for frame in stream.sent}
    assert errors[5]["code"] == -32600  # a duplicate id
    assert "already in flight" in errors[5]["message"]
    assert errors[7]["code"] == -32603  # over the map's limit of 2
    assert 6 not in errors  # 6 went to the child
    assert len(upstream.written) == 1
    assert upstream.ids.upstream(bridge.conn, 6) is not None
    assert route.ids == {6}  # the POST waits for 6 alone
    assert released == []


async def test_a_failed_write_leaves_no_id_nor_token_mapped() -> None:
    upstream = _Upstream()
    upstream.writable = False  # the child cannot be written to (it cannot start)
    bridge = _bridge(upstream)
    requests = _requests(1, 2)
    route = Route(_Stream(), [1, 2], [])  # type: ignore[arg-type]
    bridge.add(route, requests)
    assert not await bridge.send(route, requests)
    assert len(upstream.ids) == 0
    assert upstream.tokens == {}


class _Session:
    """What `SharedUpstream.join`/`leave` ask of a session."""

    conn = 0


async def test_sessions_coming_and_going_keep_one_idle_timer() -> None:
    spawned: list[Any] = []
    upstream = SharedUpstream(None, max_frame=1 << 20, spawn=spawned.append, idle_timeout=60)  # type: ignore[arg-type]
    now = [1000.0]
    upstream.clock = lambda: now[0]
    for _ in range(5):  # the last session leaves five times within the timeout
        session = _Session()
        session.conn = upstream.join(session)  # type: ignore[arg-type]
        await upstream.leave(session, "gone")  # type: ignore[arg-type]
        now[0] += 1
    assert upstream.idle_timers == 1
    assert len(spawned) == 1
    assert upstream.idle_since == 1004.0  # the timer waits from the last leave
    now[0] = 1064.0  # the timer's time is up: it reaps (nothing runs here) and ends
    await spawned[0]()
    assert upstream.reaped == 0  # no child was running
    session = _Session()
    session.conn = upstream.join(session)  # type: ignore[arg-type]
    await upstream.leave(session, "gone")  # type: ignore[arg-type]
    assert upstream.idle_timers == 2  # the ended timer is replaced by a new one


class _Child:
    """A shared child in this process: it answers the proxy's `initialize` when `answers`; its output ends
    when `eof` is called (its reader drains until then, even once it has a status)."""

    def __init__(self, *, answers: bool = True) -> None:
        self.answers = answers
        self.returncode: int | None = None
        self.output = type("Output", (), {"take": None})()
        self._send, self._receive = anyio.create_memory_object_stream[bytes](16)

    async def write(self, data: bytes) -> None:
        if self.answers and b'"initialize"' in data:
            result = (
                b'{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"c","version":"1"}}'
            )
            await self._send.send(
                b'{"jsonrpc":"2.0","id":"%s","result":%s}' % (HANDSHAKE_ID.encode(), result)
            )

    async def send(self, data: bytes) -> bool:
        return True

    def eof(self) -> None:
        self._send.close()

    async def frames(self, *, max_frame: int) -> Any:
        async for line in self._receive:
            yield core.decode(line)[0]

    async def close(self) -> int:
        if self.returncode is None:
            self.returncode = 0
        self.eof()
        return self.returncode


class _Pool:
    def __init__(self, *children: _Child) -> None:
        self.children = list(children)
        self.spawned = 0

    async def spawn(self) -> _Child:
        self.spawned += 1
        return self.children.pop(0)


class _Owed:
    """A session of the shared child: what `_died` asks of it."""

    def __init__(self) -> None:
        self.conn = 0
        self.failed: list[str] = []

    async def fail_pending(self, why: str) -> None:
        self.failed.append(why)


async def test_a_new_child_starts_only_once_the_dead_ones_reader_failed_its_requests() -> None:
    first, second = _Child(), _Child()
    pool = _Pool(first, second)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            upstream = SharedUpstream(pool, max_frame=1 << 20, spawn=tg.start_soon)  # type: ignore[arg-type]
            assert await upstream.ready() is first
            owed = _Owed()
            owed.conn = upstream.join(owed)  # type: ignore[arg-type]
            first.returncode = 1  # it died; its reader has not read to the end of its output yet
            started = anyio.Event()

            async def start_again() -> None:
                assert await upstream.ready() is second
                started.set()

            tg.start_soon(start_again)
            await anyio.wait_all_tasks_blocked()
            assert pool.spawned == 1  # no new child while the old reader still reads
            first.eof()
            await started.wait()
            assert pool.spawned == 2
            assert len(owed.failed) == 1  # the old reader failed the session's requests (`_died`)
            assert "exited (status 1)" in owed.failed[0]
            assert upstream.child is second
            assert upstream.result is not None
            await second.close()
            tg.cancel_scope.cancel()


async def test_a_start_cancelled_during_the_handshake_leaves_no_child() -> None:
    silent, answering = _Child(answers=False), _Child()
    pool = _Pool(silent, answering)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            upstream = SharedUpstream(pool, max_frame=1 << 20, spawn=tg.start_soon)  # type: ignore[arg-type]
            with anyio.CancelScope() as scope:
                tg.start_soon(lambda: _cancel_when_blocked(scope))
                await upstream.ready()
            assert scope.cancelled_caught
            assert upstream.child is None  # not handed out with no handshake done
            assert silent.returncode is not None  # closed
            assert await upstream.ready() is answering
            await answering.close()
            tg.cancel_scope.cancel()


async def _cancel_when_blocked(scope: anyio.CancelScope) -> None:
    await anyio.wait_all_tasks_blocked()
    scope.cancel()
