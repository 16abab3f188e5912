"""What the review of the HTTP stream bounds found: event ids after an eviction, keepalive against
`close_idle_streams`, the answer paths' `for_client` wiring, and the lane's session options."""

from __future__ import annotations

import asyncio

import anyio
import httpx
import pytest

from mcpframe.http.events import MemoryEventStore, split_event_id
from mcpframe.http.options import HttpOptions
from mcpframe.http.pipe import SSE_HIGH_WATER
from mcpframe.http.server import StreamableHTTPServer
from mcpframe.http.streams import Stream
from mcpframe.server import Context
from mcpframe.session import SessionOptions
from mcpframe.session.outbox import HIGH_WATER

from ._live_support import GatedTools, live_app
from ._server_support import call, open_session

pytestmark = pytest.mark.anyio


async def test_an_evicted_stream_that_writes_again_never_reuses_an_id() -> None:
    store = MemoryEventStore(max_streams_per_session=1)
    before = [store.store_now("a", "s1", None), *(store.store_now("a", "s1", b"m%d" % n) for n in range(3))]
    store.store_now("a", "s2", b"x")  # evicts s1; s2.4 (past every id s1 issued)
    after = [store.store_now("a", "s1", b"n%d" % n) for n in range(3)]  # s1 is still live: it writes again
    assert len(set(before + after)) == len(before) + len(after)
    assert [split_event_id(i) for i in after] == [("s1", 5), ("s1", 6), ("s1", 7)]  # (past s2.4 too)
    # A client that last saw an id from before the eviction cannot resume: the evicted events are gone.
    for stale in before:
        assert await store.replay("a", stale) is None
    resumed = await store.replay("a", after[0])
    assert resumed is not None
    assert resumed.events == [(after[1], b"n1"), (after[2], b"n2")]
    assert await store.replay("a", "s1.8") is None  # not issued yet


async def test_streams_stored_after_an_eviction_start_past_every_evicted_id() -> None:
    store = MemoryEventStore(max_streams_per_session=2)
    for n in range(5):
        store.store_now("a", "s1", b"%d" % n)
    store.store_now("a", "s2", None)
    store.store_now("a", "s3", None)  # evicts s1, which reached 5
    assert store.store_now("a", "s4", None) == "s4.5"  # (evicts s2)
    assert store.store_now("a", "s1", b"again") == "s1.6"  # (evicts s3, which issued s3.5) past them all
    assert store.store_now("b", "t1", None) == "t1.0"  # another session counts on its own
    await store.forget("a")
    assert store.store_now("a", "u1", None) == "u1.0"  # a forgotten session starts over


@pytest.mark.parametrize(
    ("http_server", "response_mode"),
    [("mcpframe", "sse"), ("mcpframe", "auto"), ("uvicorn", "sse"), ("uvicorn", "auto")],
)
async def test_close_idle_longer_than_keepalive_sends_keepalives_then_closes(
    http_server: str, response_mode: str
) -> None:
    # `sse` on the lean server is its `SseWriter`; `auto` hands over to an `SseReply` after `stream_after`.
    # The quiet is counted in the timers' own waits, so how many comments come does not depend on the clock.
    tools = GatedTools("k")
    opts = {
        "response_mode": response_mode,
        "stream_after": 0.01,
        "close_idle_streams": 0.3,
        "keepalive": 0.05,
    }
    async with live_app(tools, http_server=http_server, **opts) as (url, _app), httpx.AsyncClient() as client:
        headers = await open_session(client, url)
        with anyio.fail_after(20):
            answer = await client.post(
                url, json=call("hold", {"text": "h"}, rid=7), headers=headers, timeout=30
            )
        tools.gate.set()
    body = answer.text
    assert body.startswith("id: ")  # primed: resumable, so SSE polling closes it
    assert body.count(": keepalive\n\n") >= 3  # the keep-alive went on until `close_idle` of quiet in all
    assert '"result"' not in body  # closed while the tool still waited, not ended by its answer


class _Chatty(GatedTools):
    """`chat` logs `LOGS` messages of about 1 KiB, then waits on the gate."""

    LOGS = 256

    def __init__(self) -> None:
        super().__init__("chatty")
        tools = self

        @self.server.tool
        async def chat(ctx: Context) -> str:
            for n in range(self.LOGS):
                await ctx.info(f"{n:06d}" + "x" * 1000)
            tools.entered.set()
            await tools.gate.wait()
            return "ok"


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_json_only_client_keeps_no_notification_before_its_answer(http_server: str) -> None:
    # `PostHandler._answer` (uvicorn) and the lean server's `fast_pending.Pending` (after warm calls leave
    # it an idle lane) tell the stream its client takes JSON only: the logs it can never receive are not
    # kept
    tools = _Chatty()
    opts = {"response_mode": "auto", "stream_after": 60.0}
    async with live_app(tools, http_server=http_server, **opts) as (url, app), httpx.AsyncClient() as client:
        headers = await open_session(client, url)
        for rid in (100, 101):
            await client.post(url, json=call("echo", {"text": "w"}, rid=rid), headers=headers, timeout=30)
        json_only = {**headers, "accept": "application/json"}
        async with anyio.create_task_group() as tg:
            answers: list[httpx.Response] = []

            async def post() -> None:
                answers.append(
                    await client.post(url, json=call("chat", rid=7), headers=json_only, timeout=30)
                )

            tg.start_soon(post)
            with anyio.fail_after(20):
                await tools.entered.wait()  # every log was sent
            streams = [e.stream for s in app.sessions.sessions.values() for e in s.router.exchanges.values()]
            assert len(streams) == 1
            assert streams[0]._backlog == []
            tools.gate.set()
    assert answers[0].json()["result"]["content"] == [{"type": "text", "text": "ok"}]


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_an_sse_client_has_the_handler_wait_past_the_high_water(
    http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before its SSE response attaches, the logs kept for it stop at about `SSE_HIGH_WATER` (and one log):
    # the handler waits there until the response takes them
    sizes: list[int] = []
    real_room = Stream._backlog_room

    def room(self: Stream) -> asyncio.Future[None] | None:
        sizes.append(self._backlog_size)
        return real_room(self)

    monkeypatch.setattr(Stream, "_backlog_room", room)
    tools = _Chatty()
    # the lanes' outbox would stop the handler at the same mark: with a larger one, only the stream does
    lanes = SessionOptions(outbox_high_water=4 * 1024 * 1024)
    opts = {"response_mode": "auto", "stream_after": 60.0, "session_options": lanes}
    async with live_app(tools, http_server=http_server, **opts) as (url, _app), httpx.AsyncClient() as client:
        headers = await open_session(client, url)
        for rid in (100, 101):
            await client.post(url, json=call("echo", {"text": "w"}, rid=rid), headers=headers, timeout=30)
        tools.gate.set()
        with anyio.fail_after(20):
            answer = await client.post(url, json=call("chat", rid=7), headers=headers, timeout=30)
    assert answer.text.count('"notifications/message"') == _Chatty.LOGS
    assert sizes  # the backlog was bounded (an untold stream never asks for room)
    assert max(sizes) < SSE_HIGH_WATER + 2 * 1024  # it stopped growing at the high water and one log


@pytest.mark.parametrize(
    ("session_options", "mark"),
    [
        (None, SSE_HIGH_WATER),
        (SessionOptions(max_in_flight=3), SSE_HIGH_WATER),
        (
            SessionOptions(outbox_high_water=HIGH_WATER),
            SSE_HIGH_WATER,
        ),  # the Session's default reads as unset
        (SessionOptions(outbox_high_water=HIGH_WATER + 1), HIGH_WATER + 1),
    ],
)
def test_lane_options_gives_the_mark_the_lanes_use(session_options: SessionOptions | None, mark: int) -> None:
    options = HttpOptions(session_options=session_options, max_body=4096)
    lanes = options.lane_options()
    assert lanes.outbox_high_water == mark
    assert lanes.max_frame == 4096
    app = StreamableHTTPServer(GatedTools("lanes").server, options)
    assert app.posts._lane_options == lanes  # what the lanes are built with
