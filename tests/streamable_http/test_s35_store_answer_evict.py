"""`MemoryEventStore.store_answer_now` at the session's stream bound (its eviction inline): the same
evictions, byte count and id floor as two `store_now` calls would leave."""

from __future__ import annotations

import pytest

from mcpframe.http.events import MemoryEventStore

pytestmark = pytest.mark.anyio


async def test_answers_at_the_stream_bound_evict_as_store_now_does() -> None:
    whole = MemoryEventStore(max_streams_per_session=2)
    split = MemoryEventStore(max_streams_per_session=2)
    for n in range(5):
        message = b"x" * (n + 1)
        seq = whole.store_answer_now("a", f"s{n}", message)
        priming = split.store_now("a", f"s{n}", None)
        assert f"s{n}.{seq}" == priming
        assert split.store_now("a", f"s{n}", message) == f"s{n}.{seq + 1}"
    assert list(whole._order["a"]) == ["s3", "s4"]
    assert whole._bytes["a"] == 4 + 5
    assert whole._floor["a"] == split._floor["a"] == 4  # s2 reached sequence 4 before its eviction
    for store in (whole, split):
        assert await store.replay("a", "s2.3") is None  # evicted: not resumable
        replay = await store.replay("a", "s4.4")
        assert replay is not None
        assert [m for _, m in replay.events] == [b"xxxxx"]
    assert whole._bytes == split._bytes
    assert whole._next == split._next
    assert whole._first == split._first


async def test_an_evicted_stream_written_by_store_now_is_dropped_by_an_answer() -> None:
    store = MemoryEventStore(max_streams_per_session=1)
    store.store_now("a", "long", b"one")
    store.store_now("a", "long", b"two")
    seq = store.store_answer_now("a", "answer", b"three")
    assert seq == 2  # past every id the evicted stream issued
    assert list(store._sessions["a"]) == ["answer"]
    assert store._bytes["a"] == 5
    assert "long" not in store._next
    assert "long" not in store._first
