"""What instances know of each other through Redis: a session's GET stream is held by one response (409
elsewhere), a dead instance's claims lapse and its POST streams end with an error answer where they are
resumed, and rebuilt sessions count against `--max-sessions`.

The instances here refresh their liveness every quarter of 3 s (`--store-liveness 3`), so what a dead
instance leaves behind lapses within ~3 s; no test sleeps for it: each polls, bounded by `fail_after`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest

from mcpframe.http.redis_store import RedisStore

from .conftest import instances
from .support import Events, Instance, RedisProcess, rpc
from .test_legacy_sse import post, read_endpoint, sse_url
from .test_streams import open_session

pytestmark = pytest.mark.anyio

_QUICK = ("--store-liveness", "3", "--store-timeout", "0.5")


@pytest.fixture(scope="module")
def four(redis: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Instance]]:
    """a and b (each killed by one test), c and d (never killed; d keeps 2 sessions at most)."""
    bounded = ("--max-sessions", "2")
    with (
        instances(redis, tmp_path_factory.mktemp("liveness"), 3, *_QUICK) as three,
        instances(redis, tmp_path_factory.mktemp("liveness-d"), 1, *_QUICK, *bounded) as one,
    ):
        yield three + one


@asynccontextmanager
async def get_stream(
    http: httpx.AsyncClient, url: str, headers: dict[str, str]
) -> AsyncIterator[tuple[httpx.Response, Events]]:
    """An open GET stream of the session: the response (its status checked by the caller), its events."""
    async with http.stream("GET", url, headers=headers) as response:
        yield response, Events(response)


async def get_status(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> int:
    """The status of a GET of the session's stream (closed at once when it opens)."""
    async with http.stream("GET", url, headers=headers) as response:
        return response.status_code


async def test_a_second_get_stream_is_refused_on_every_instance(four: list[Instance]) -> None:
    c, d = four[2], four[3]
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, c.url)
            async with get_stream(http, c.url, headers) as (first, events):
                assert first.status_code == 200
                assert await events.next() is not None  # the priming event: the stream is open
                for url in (d.url, c.url):  # another instance, and the same one
                    refused = await http.get(url, headers=headers)
                    assert refused.status_code == 409
                    assert "already open" in refused.json()["error"]["message"]
            # the first response ended: its claim goes at once, the next GET anywhere opens the stream
            while (status := await get_status(http, d.url, headers)) == 409:
                await anyio.sleep(0.05)  # polling for the claim's release, bounded by fail_after
            assert status == 200


async def test_a_resume_takes_the_get_stream_over(four: list[Instance]) -> None:
    c, d = four[2], four[3]
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, c.url)
            async with get_stream(http, c.url, headers) as (_, events):
                priming = await events.next()
                assert priming is not None
                resume = {**headers, "last-event-id": priming[0] or ""}
                async with get_stream(http, d.url, resume) as (second, _):
                    assert second.status_code == 200
                    # c hears that d took the claim (published): the old response ends
                    assert await events.next() is None
                    assert (await http.get(c.url, headers=headers)).status_code == 409  # d holds it


async def test_a_dead_instances_get_claim_and_legacy_session_lapse(four: list[Instance]) -> None:
    a, c = four[0], four[2]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(20):  # well below the legacy key's 30 s: the holder's liveness decides
            headers = await open_session(http, c.url)
            async with (
                get_stream(http, a.url, headers) as (get, events),
                http.stream("GET", sse_url(a), headers={"accept": "text/event-stream"}) as legacy,
            ):
                assert get.status_code == 200
                assert await events.next() is not None
                lines = legacy.aiter_lines()  # kept: a dropped line iterator would close the stream
                endpoint = await read_endpoint(lines)
                assert (await post(http, c, endpoint, ping)).status_code == 202  # relayed to a
                a.kill()
                assert await get_status(http, c.url, headers) == 409  # a's claim outlives it a while
                # a refreshes nothing now: within its liveness time its claim and its legacy key lapse
                while (status := await get_status(http, c.url, headers)) == 409:
                    await anyio.sleep(0.1)  # polling for the lapse, bounded by fail_after
                assert status == 200
                while (answer := await post(http, c, endpoint, ping)).status_code == 503:
                    await anyio.sleep(0.1)  # a relay nobody answered; polling, bounded by fail_after
                assert answer.status_code == 404  # not 503 for the 30 s the legacy key lives on


async def test_a_post_stream_whose_instance_died_ends_with_an_error_answer(four: list[Instance]) -> None:
    b, c, d = four[1], four[2], four[3]
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(40):
            headers = await open_session(http, c.url)
            body = rpc(7, "tools/call", {"name": "wait_for_cancel", "_meta": {"progressToken": "p"}})
            async with http.stream("POST", b.url, json=body, headers=headers) as running:
                events = Events(running)
                while (event := await events.next()) is not None and "progress" not in event[1]:
                    pass
                assert event is not None  # running on b, its progress stored
                b.kill()
            progress_id = event[0] or ""
            ended = [await resume_to_end(http, url, headers, progress_id) for url in (c.url, d.url)]
    # c waited for b's liveness to lapse, then stored the answer b never gave and the stream's end; d,
    # later, replays exactly that: none lost, none twice
    assert ended[0] == ended[1]
    assert len(ended[0]) == 1
    answer = json.loads(ended[0][0][1])
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32000
    assert "went away" in answer["error"]["message"]


async def resume_to_end(
    http: httpx.AsyncClient, url: str, headers: dict[str, str], last_event_id: str
) -> list[tuple[str | None, str]]:
    """Every event of a resumed stream, to its end."""
    async with http.stream("GET", url, headers={**headers, "last-event-id": last_event_id}) as get:
        assert get.status_code == 200
        events = Events(get)
        return [event async for event in _all(events)]


async def _all(events: Events) -> AsyncIterator[tuple[str | None, str]]:
    while (event := await events.next()) is not None:
        yield event


async def test_rebuilt_sessions_count_against_max_sessions(four: list[Instance]) -> None:
    c, d = four[2], four[3]  # d keeps 2 sessions at most
    ping = rpc(1, "ping")
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(40):
            sessions = [await open_session(http, c.url) for _ in range(3)]
            for headers in sessions + sessions:  # rebuilt on d, each dropping the least recently used
                reply = await http.post(d.url, json=ping, headers=headers)
                assert reply.status_code == 200, reply.text
            first, second, third = sessions
            async with (
                get_stream(http, d.url, first) as (one, _),
                get_stream(http, d.url, second) as (two, _),
            ):
                assert one.status_code == two.status_code == 200  # neither of them is idle now
                refused = await http.post(d.url, json=ping, headers=third)
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "1"
                assert "too many sessions" in refused.json()["error"]["message"]
                assert (await http.post(d.url, json=ping, headers=first)).status_code == 200  # held: served
            while (reply := await http.post(d.url, json=ping, headers=third)).status_code == 503:
                await anyio.sleep(0.05)  # polling for the GETs' end on d, bounded by fail_after
            assert reply.status_code == 200


async def test_an_orphaned_stream_is_ended_once_with_what_it_still_owed(redis: RedisProcess) -> None:
    store = RedisStore(redis.url, idle_timeout=60, timeout=5, liveness=3)
    try:
        with anyio.fail_after(10):
            await store.refresh({})  # alive
            store.describe("batch", [1, 2, "three"])
            answered = b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":"x","result":{}}]'
            await store.store_many("orphan", "batch", [None, answered])
            key = "mcpframe:e:orphan:batch"
            assert not await store.finish_orphan(key)  # its instance lives: nothing to do
            await store.redis.delete(f"mcpframe:i:{store.instance}")  # as if it had died
            assert await store.finish_orphan(key)
            assert not await store.finish_orphan(key)  # another tail, later: the stream has ended
            entries = await store.redis.xrange(key)
    finally:
        await store.aclose()
    frames = [json.loads(fields[b"m"]) for _, fields in entries if fields.get(b"m")]
    owed = [frame["id"] for frame in frames[1:]]
    assert owed == [2, "three"]  # 1 was answered (in a batch's array), "x" was never its own
    assert all(frame["error"]["code"] == -32000 for frame in frames[1:])
    assert entries[-1][1] == {b"end": b"1"}
    assert sum(1 for _, fields in entries if b"end" in fields) == 1


async def test_claims_refresh_take_over_and_retire(redis: RedisProcess) -> None:
    store = RedisStore(redis.url, idle_timeout=60, timeout=5, liveness=3)
    try:
        with anyio.fail_after(10):
            assert await store.claim_get("claimed", "mine", take=False)
            assert not await store.claim_get("claimed", "theirs", take=False)  # a second GET: 409
            assert await store.refresh({"claimed": "mine"}) == set()
            assert await store.redis.exists(f"mcpframe:i:{store.instance}")
            assert await store.claim_get("claimed", "resumed", take=True)  # a resume takes it over
            assert await store.refresh({"claimed": "mine"}) == {"claimed"}  # the old holder learns it
            await store.release_get("claimed", "mine")  # not its own any more: left alone
            assert await store.redis.get("mcpframe:g:claimed") == b"resumed"
            await store.retire({"claimed": "resumed"})
            assert not await store.redis.exists("mcpframe:g:claimed", f"mcpframe:i:{store.instance}")
    finally:
        await store.aclose()
