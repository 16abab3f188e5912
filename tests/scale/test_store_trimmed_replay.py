"""The Redis store keeps `max_events` entries per stream: a `Last-Event-ID` whose next events were trimmed
cannot resume (`None`, the server's 404) instead of replaying what is left and silently skipping the rest."""

from __future__ import annotations

import anyio
import pytest

from mcpframe.http.redis_store import RedisStore

from .support import RedisProcess

pytestmark = pytest.mark.anyio


async def test_a_replay_never_skips_events_the_bound_trimmed(redis: RedisProcess) -> None:
    store = RedisStore(redis.url, idle_timeout=60, timeout=5, max_events=4)
    try:
        with anyio.fail_after(10):
            ids = [await store.store("trim", "s", None if n < 0 else b"m%d" % n) for n in range(-1, 10)]
            lost = [await store.replay("trim", event_id) for event_id in ids[:6]]  # priming, m0 .. m4
            whole = await store.replay("trim", ids[6])  # m5: its next, m6, is the oldest kept
            latest = await store.replay("trim", ids[-1])
    finally:
        await store.aclose()
    assert lost == [None] * 6
    assert whole is not None
    assert [message for _, message in whole.events] == [b"m6", b"m7", b"m8", b"m9"]
    assert latest is not None
    assert latest.events == []
