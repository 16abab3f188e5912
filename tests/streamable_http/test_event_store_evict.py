"""`MemoryEventStore` evicts a session's oldest stream in the order the streams began, however many came
and went, and keeps each session's order apart (an eviction is one step: benches/event_store_churn.py)."""

from __future__ import annotations

import pytest

from mcpframe.http.events import MemoryEventStore

pytestmark = pytest.mark.anyio


class _Store(MemoryEventStore):
    """Remembers the latest id issued per stream (an evicted stream writing again carries on its count)."""

    def __init__(self, **bounds: int) -> None:
        super().__init__(**bounds)
        self.latest: dict[tuple[str, str], str] = {}

    def store_now(self, session_id: str, stream_id: str, message: bytes | None) -> str:
        event_id = self.latest[session_id, stream_id] = super().store_now(session_id, stream_id, message)
        return event_id


async def _kept(store: _Store, session: str, streams: list[str]) -> list[str]:
    """Which of `streams` the store can still replay from their latest id."""
    return [s for s in streams if await store.replay(session, store.latest[session, s]) is not None]


async def test_the_oldest_stream_goes_first_through_many_evictions() -> None:
    store = _Store(max_streams_per_session=3)
    names = [f"s{n}" for n in range(1000)]
    for name in names:
        store.store_now("a", name, None)
        store.store_now("a", name, b"m")
        store.store_now("a", "s997", b"late")  # an older stream written again keeps its place
    assert await _kept(store, "a", names) == ["s997", "s998", "s999"]
    store.store_now("a", "s1000", None)
    assert await _kept(store, "a", [*names, "s1000"]) == ["s998", "s999", "s1000"]


async def test_sessions_evict_their_own_streams_and_a_forgotten_one_starts_over() -> None:
    store = _Store(max_streams_per_session=2)
    for name in ("a1", "a2"):
        store.store_now("a", name, None)
    for name in ("b1", "b2", "b3"):
        store.store_now("b", name, None)
    assert await _kept(store, "a", ["a1", "a2"]) == ["a1", "a2"]  # b's evictions took none of a's
    assert await _kept(store, "b", ["b1", "b2", "b3"]) == ["b2", "b3"]
    await store.forget("b")
    assert len(store) == 1
    for name in ("c1", "c2", "c3"):  # the same session id again: nothing of its old streams is left
        store.store_now("b", name, None)
    assert await _kept(store, "b", ["b2", "b3", "c1", "c2", "c3"]) == ["c2", "c3"]
