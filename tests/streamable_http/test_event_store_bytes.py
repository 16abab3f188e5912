"""`MemoryEventStore` keeps a session's stored messages under `max_bytes_per_session`: its other streams go
first, oldest first, then the oldest events of the stream being written (never its newest); what went
cannot be resumed (`None`, the server's 404), and what stayed resumes whole."""

from __future__ import annotations

import pytest

from mcpframe.http.events import MemoryEventStore

pytestmark = pytest.mark.anyio

_KB = b"x" * 1000


async def _resumable(store: MemoryEventStore, session: str, event_id: str) -> bool:
    return await store.replay(session, event_id) is not None


async def test_the_oldest_other_streams_go_first() -> None:
    store = MemoryEventStore(max_bytes_per_session=5000)
    primes = {name: store.store_now("a", name, None) for name in ("s1", "s2", "s3")}
    for name in ("s1", "s2"):
        for _ in range(2):
            store.store_now("a", name, _KB)
    store.store_now("b", "other", _KB * 10)  # another session's bytes count for it alone
    assert await _resumable(store, "a", primes["s1"])
    store.store_now("a", "s3", _KB)  # 5,000 bytes: at the bound, not past it
    assert await _resumable(store, "a", primes["s1"])
    store.store_now("a", "s3", _KB)  # past it: s1 (the oldest other stream) goes, and that is enough
    assert [await _resumable(store, "a", primes[n]) for n in ("s1", "s2", "s3")] == [False, True, True]
    replay = await store.replay("a", primes["s3"])
    assert replay is not None
    assert [message for _, message in replay.events] == [_KB, _KB]


async def test_a_stream_alone_past_the_bound_loses_its_oldest_events_never_its_newest() -> None:
    store = MemoryEventStore(max_bytes_per_session=3500)
    ids = [store.store_now("a", "s", None if n < 0 else b"%d" % n + _KB) for n in range(-1, 10)]
    assert [await _resumable(store, "a", event_id) for event_id in ids] == [False] * 7 + [True] * 4
    replay = await store.replay("a", ids[7])  # the event before the three kept
    assert replay is not None
    assert [message[:1] for _, message in replay.events] == [b"7", b"8", b"9"]
    huge = store.store_now("a", "s", _KB * 10)  # bigger than the bound alone: kept
    latest = await store.replay("a", ids[-1])
    assert latest is not None
    assert [len(message) for _, message in latest.events] == [10000]
    assert await _resumable(store, "a", huge)


async def test_events_the_count_bound_dropped_no_longer_count_for_bytes() -> None:
    store = MemoryEventStore(max_events_per_stream=2, max_bytes_per_session=4000)
    kept = store.store_now("a", "old", _KB)
    for _ in range(100):  # 100 KB through a stream that keeps two events: 2,000 bytes stored
        store.store_now("a", "busy", _KB)
    store.store_now("a", "new", _KB)  # 4,000 bytes with the others: at the bound, nothing to shed
    assert await _resumable(store, "a", kept)


async def test_an_answer_stored_whole_counts_and_stays_whole() -> None:
    store = MemoryEventStore(max_bytes_per_session=3000)
    first = store.store_answer_now("a", "one", _KB * 2)
    second = store.store_answer_now("a", "two", _KB * 2)  # past the bound: "one" goes
    assert not await _resumable(store, "a", f"one.{first}")
    replay = await store.replay("a", f"two.{second}")
    assert replay is not None
    assert [message for _, message in replay.events] == [_KB * 2]
    await store.forget("a")
    again = store.store_answer_now("a", "three", _KB * 2)  # a forgotten session starts from nothing
    store.store_now("a", "four", _KB)
    assert await _resumable(store, "a", f"three.{again}")


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_bytes_per_session"):
        MemoryEventStore(max_bytes_per_session=0)
