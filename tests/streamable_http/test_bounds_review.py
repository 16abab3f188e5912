"""What the review of the HTTP stream bounds found: event ids after an eviction, keepalive against
`close_idle_streams`, the answer paths' `for_client` wiring, and the lane's session options."""

from __future__ import annotations

import anyio
import httpx
import pytest

from mcpframe.http.events import MemoryEventStore, split_event_id

from ._live_support import GatedTools, live_app
from ._server_support import call, open_session

pytestmark = pytest.mark.anyio


async def test_an_evicted_stream_that_writes_again_never_reuses_an_id() -> None:
    store = MemoryEventStore(max_streams_per_session=1)
    before = [store.store_now("a", "s1", None), *(store.store_now("a", "s1", b"m%d" % n) for n in range(3))]
    store.store_now("a", "s2", b"x")  # evicts s1
    after = [store.store_now("a", "s1", b"n%d" % n) for n in range(3)]  # s1 is still live: it writes again
    assert len(set(before + after)) == len(before) + len(after)
    assert [split_event_id(i) for i in after] == [("s1", 4), ("s1", 5), ("s1", 6)]
    # A client that last saw an id from before the eviction cannot resume: the evicted events are gone.
    for stale in before:
        assert await store.replay("a", stale) is None
    resumed = await store.replay("a", after[0])
    assert resumed is not None
    assert resumed.events == [(after[1], b"n1"), (after[2], b"n2")]
    assert await store.replay("a", "s1.7") is None  # not issued yet


async def test_forget_drops_the_evicted_streams_counters_too() -> None:
    store = MemoryEventStore(max_streams_per_session=1)
    store.store_now("a", "s1", None)
    store.store_now("a", "s2", None)
    assert store.store_now("b", "s1", None) == "s1.0"  # another session's stream has its own count
    await store.forget("a")
    assert store.store_now("a", "s1", None) == "s1.0"  # a forgotten session starts over


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
