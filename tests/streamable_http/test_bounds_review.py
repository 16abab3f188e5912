"""What the review of the HTTP stream bounds found: event ids after an eviction, keepalive against
`close_idle_streams`, the answer paths' `for_client` wiring, and the lane's session options."""

from __future__ import annotations

import pytest

from mcpframe.http.events import MemoryEventStore, split_event_id

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
