"""A lone SSE answer's events in one store call (`streams.answer_events`, the memory store's
`store_answer_now`), and a `Streamed` answer to a plain POST opened where it was read
(`wire._Connection._answer_plain`).

`answer_events` must give what `events_now` gives for the same stream (the same bytes, the same events
stored and replayed), falling back to it where the one call does not fit: no priming, no session, a frame
`format_event` splits over lines, a store subclass with its own `store_now`. A `Streamed` answer opened from
the read keeps the order of what was pipelined behind it, as one queued through `_next` did.
"""

from __future__ import annotations

import asyncio

import anyio
import pytest

from mcpframe.http import streams
from mcpframe.http.events import MemoryEventStore
from mcpframe.http.streams import answer_events, events_now
from mcpframe.http.wire_parts import Streamed, StreamOut, WireAnswer
from mcpframe.http.wire_plain import PLAIN

from ._wire_support import FastApp, count_nexts, ok_bodies, post, until, wire_connection

pytestmark = pytest.mark.anyio

_FRAME = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the wire server is built on asyncio Protocols


@pytest.fixture
def fixed_id(monkeypatch: pytest.MonkeyPatch) -> str:
    """`new_stream_id` made to give one known id (both ways of storing then name the same stream)."""
    monkeypatch.setattr(streams, "new_stream_id", lambda: "s1")
    return "s1"


class _LoggedStore(MemoryEventStore):
    """A memory store whose own `store_now` must see every event (it overrides how events are stored)."""

    def __init__(self, **bounds: int) -> None:
        super().__init__(**bounds)
        self.seen: list[bytes | None] = []

    def store_now(self, session_id: str, stream_id: str, message: bytes | None) -> str:
        self.seen.append(message)
        return super().store_now(session_id, stream_id, message)


def _both(frame: bytes, retry: int | None, session: str | None, **bounds: int) -> tuple[bytes, bytes]:
    """(`answer_events`' body, `events_now`'s) for `frame`, each on a fresh memory store, warmed up with
    one stream so both sequences start past 0."""
    fast, slow = MemoryEventStore(**bounds), MemoryEventStore(**bounds)
    for store in (fast, slow):
        store.store_now("sess", "warm", b"{}")
    got = answer_events(fast, session, frame, retry)
    _, want = events_now(slow.store_now, session, "s1", (frame,), retry)
    return got, want


@pytest.mark.parametrize("retry", [None, 1500])
@pytest.mark.parametrize("session", [None, "sess"])
@pytest.mark.parametrize("frame", [_FRAME, _FRAME + b"\n", b'{"a":\n1}', b'{"a":\r\n1}\n'])
async def test_answer_events_gives_events_nows_body(
    frame: bytes, session: str | None, retry: int | None, fixed_id: str
) -> None:
    got, want = _both(frame, retry, session)
    assert got == want


@pytest.mark.parametrize("max_events", [1, 2, 1024])
async def test_answer_events_stores_what_events_now_stores(max_events: int, fixed_id: str) -> None:
    fast, slow = (
        MemoryEventStore(max_events_per_stream=max_events),
        MemoryEventStore(max_events_per_stream=max_events),
    )
    got = answer_events(fast, "sess", _FRAME, 1500)
    _, want = events_now(slow.store_now, "sess", fixed_id, (_FRAME,), 1500)
    assert got == want
    assert got.startswith(b"id: s1.0\nretry: 1500\n")
    for event_id in ("s1.0", "s1.1", "s1.2"):
        assert await fast.replay("sess", event_id) == await slow.replay("sess", event_id)
    replay = await fast.replay("sess", "s1.0")
    assert replay is not None
    assert [message for _, message in replay.events] == [_FRAME]  # the answer, after its priming event


async def test_answer_events_evicts_as_events_now_does(fixed_id: str) -> None:
    fast, slow = MemoryEventStore(max_streams_per_session=1), MemoryEventStore(max_streams_per_session=1)
    for store in (fast, slow):
        store.store_now("sess", "old", b"{}")
        store.store_now("sess", "old", b"{}")
    got = answer_events(fast, "sess", _FRAME, 10)
    _, want = events_now(slow.store_now, "sess", fixed_id, (_FRAME,), 10)
    assert got == want
    assert got.startswith(b"id: s1.2\n")  # past every id the evicted stream issued
    assert await fast.replay("sess", "old.0") is None


async def test_a_store_with_its_own_store_now_stores_each_event_there(fixed_id: str) -> None:
    store = _LoggedStore()
    body = answer_events(store, "sess", _FRAME, 1500)
    assert store.seen == [None, _FRAME]  # the priming event, then the answer
    assert body == b"id: s1.0\nretry: 1500\ndata: \n\nid: s1.1\nevent: message\ndata: %s\n\n" % _FRAME


# ------------------------------------------------------------------ a `Streamed` answer from the read


class _Written(Streamed):
    """An answer the test ends (`out.end`), or one the server reports lost."""

    __slots__ = ("losses", "out")

    def __init__(self) -> None:
        self.out: StreamOut | None = None
        self.losses = 0

    def head(self) -> tuple[int, bytes]:
        return 200, b"content-type: text/plain\r\n"

    def opened(self, out: StreamOut) -> None:
        self.out = out

    def lost(self) -> None:
        self.losses += 1


class _App(FastApp):
    """`stream:X` is answered by a `_Written` the test ends with `X`; `whole:X` with `X` at once."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[_Written] = []

    def later(self, body: bytes) -> WireAnswer:
        written = _Written()
        self.written.append(written)
        return written


async def _chunked_body(reader: asyncio.StreamReader) -> bytes:
    """The body of the next response, a 200 in chunks."""
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
    assert b"transfer-encoding: chunked\r\n" in head
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n"))[:-2], 16)
        chunk = await reader.readexactly(size + 2)
        if not size:
            return body
        body += chunk[:-2]


@pytest.fixture
def nexts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times `_Connection._next` ran (a request taken from the queue)."""
    return count_nexts(monkeypatch)


async def test_a_streamed_answer_is_opened_from_the_read_and_what_follows_waits(nexts: list[int]) -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, reader, writer):
            writer.write(post(b"stream:a") + post(b"whole:b") + post(b"stream:c"))
            await until(lambda: bool(app.written) and app.written[0].out is not None)
            (connection,) = wire.connections
            assert connection.current is not None
            assert connection.idle_deadline is None  # being answered: no keep-alive timeout
            if PLAIN is not None:
                assert nexts == []  # opened where it was read, not through the queue
            for _ in range(5):
                await anyio.sleep(0)
            assert app.offered == [b"stream:a"]  # the rest waits for `a`'s end
            first = app.written[0].out
            assert first is not None
            first.write(b"a1")
            first.end(b"a2")
            await until(lambda: len(app.written) == 2 and app.written[1].out is not None)
            last = app.written[1].out
            assert last is not None
            last.end(b"c")
            assert await _chunked_body(reader) == b"a1a2"
            assert await ok_bodies(reader, 1) == [b"b"]
            assert await _chunked_body(reader) == b"c"
            await until(lambda: connection.current is None)
            assert connection.idle_deadline is not None  # idle again: the keep-alive's timer runs
    assert app.offered == [b"stream:a", b"whole:b", b"stream:c"]
    assert [w.losses for w in app.written] == [0, 0]


async def test_a_client_that_leaves_a_streamed_answer_from_the_read_has_it_lost() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, _, writer):
            writer.write(post(b"stream:a"))
            await until(lambda: bool(app.written) and app.written[0].out is not None)
            writer.close()
            await until(lambda: app.written[0].losses == 1)
            await until(lambda: not wire.connections)
    assert app.written[0].losses == 1
