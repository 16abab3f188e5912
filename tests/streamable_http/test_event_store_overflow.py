"""A stream longer than `max_events_per_stream` lost its oldest events: a `Last-Event-ID` from before them
cannot resume (`None`, the server's 404), instead of a replay that silently skips what the bound dropped."""

from __future__ import annotations

import pytest

from mcpframe.http.events import MemoryEventStore

pytestmark = pytest.mark.anyio


def _fill(store: MemoryEventStore, count: int) -> list[str]:
    """A priming event, then `count` messages `m0`, `m1`, ... on stream `s` of session `a`: their ids."""
    return [store.store_now("a", "s", None if n < 0 else b"m%d" % n) for n in range(-1, count)]


async def test_an_id_whose_next_events_fell_off_the_bound_cannot_resume() -> None:
    store = MemoryEventStore(max_events_per_stream=4)
    ids = _fill(store, 10)  # kept: m6 .. m9
    for lost in ids[:6]:  # priming, m0 .. m4: what follows each includes a dropped event
        assert await store.replay("a", lost) is None, lost


async def test_an_id_right_before_the_oldest_kept_event_still_resumes_whole() -> None:
    store = MemoryEventStore(max_events_per_stream=4)
    ids = _fill(store, 10)
    replay = await store.replay("a", ids[6])  # m5: the next one, m6, is the oldest kept
    assert replay is not None
    assert [message for _, message in replay.events] == [b"m6", b"m7", b"m8", b"m9"]
    latest = await store.replay("a", ids[-1])
    assert latest is not None
    assert latest.events == []


async def test_a_stream_within_the_bound_resumes_from_its_priming_event() -> None:
    store = MemoryEventStore(max_events_per_stream=4)
    ids = _fill(store, 3)
    replay = await store.replay("a", ids[0])
    assert replay is not None
    assert [message for _, message in replay.events] == [b"m0", b"m1", b"m2"]


async def test_a_bound_of_one_keeps_an_answer_stored_whole_resumable_from_its_priming_event() -> None:
    store = MemoryEventStore(max_events_per_stream=1)
    priming = store.store_answer_now("a", "s", b"answer")
    replay = await store.replay("a", f"s.{priming}")
    assert replay is not None
    assert [message for _, message in replay.events] == [b"answer"]
