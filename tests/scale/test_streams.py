"""SSE across instances: the GET stream survives the instance holding it, POST streams resume elsewhere,
a cancel reaches the instance running its request."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import httpx
import pytest

from .conftest import instances
from .support import HEADERS, INITIALIZE, Events, Instance, RedisProcess, rpc

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def pair(redis: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Instance]]:
    """Two instances of their own (a test kills one)."""
    with instances(redis, tmp_path_factory.mktemp("pair"), 2) as two:
        yield two


async def open_session(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    """initialize + initialized on `url`: the headers of the session's next requests."""
    reply = await http.post(url, json=INITIALIZE, headers=HEADERS)
    assert reply.status_code == 200, reply.text
    headers = {**HEADERS, "mcp-session-id": reply.headers["mcp-session-id"]}
    done = await http.post(url, json=rpc(None, "notifications/initialized"), headers=headers)
    assert done.status_code == 202
    return headers


async def call(http: httpx.AsyncClient, url: str, headers: dict[str, str], rid: int, name: str) -> None:
    """tools/call, its whole answer read."""
    reply = await http.post(url, json=rpc(rid, "tools/call", {"name": name}), headers=headers)
    assert reply.status_code == 200, reply.text
    assert f'"id":{rid}' in reply.text.replace(" ", "")


def seq(event_id: str | None) -> int:
    assert event_id is not None
    return int(event_id.rpartition(".")[2])


async def test_get_stream_resumes_on_another_instance_after_a_kill(pair: list[Instance]) -> None:
    a, b = pair
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, a.url)
            sub = rpc(1, "resources/subscribe", {"uri": "test://watched-resource"})
            assert (await http.post(b.url, json=sub, headers=headers)).status_code == 200
            seen: list[tuple[str | None, str]] = []
            async with http.stream("GET", a.url, headers=headers) as get:
                assert get.status_code == 200
                events = Events(get)
                priming = await events.next()
                assert priming is not None
                assert priming[1] == ""
                for rid in (2, 3, 4):  # produced on b, delivered by a (the stream's holder) from Redis
                    await call(http, b.url, headers, rid, "touch_watched")
                    event = await events.next()
                    assert event is not None
                    assert "resources/updated" in event[1]
                    seen.append(event)
                a.kill()  # the instance holding the stream dies mid-stream
            for rid in (5, 6):  # missed while no stream is open
                await call(http, b.url, headers, rid, "touch_watched")
            resume = {**headers, "last-event-id": seen[-1][0] or ""}
            async with http.stream("GET", b.url, headers=resume) as get:
                assert get.status_code == 200
                events = Events(get)
                for _ in (5, 6):
                    event = await events.next()
                    assert event is not None
                    assert "resources/updated" in event[1]
                    seen.append(event)
                await call(http, b.url, headers, 7, "touch_watched")  # and live again
                event = await events.next()
                assert event is not None
                seen.append(event)
    numbers = [seq(event_id) for event_id, _ in seen]
    assert numbers == list(range(numbers[0], numbers[0] + 6))  # none lost, none twice, in order


async def test_post_stream_resumes_on_another_instance(cluster: list[Instance]) -> None:
    a, b, _ = cluster
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, a.url)
            body = rpc(1, "tools/call", {"name": "tick", "arguments": {"count": 6}})
            async with http.stream("POST", a.url, json=body, headers=headers) as post:
                events = Events(post)
                priming = await events.next()
                first = await events.next()
                assert priming is not None
                assert first is not None
                assert "tick 0" in first[1]
            # the connection to a dropped; the client resumes through b, which reads a's stream from Redis
            resume = {**headers, "last-event-id": first[0] or ""}
            async with http.stream("GET", b.url, headers=resume) as get:
                assert get.status_code == 200
                events = Events(get)
                rest = []
                while (event := await events.next()) is not None:
                    rest.append(event)
    texts = [json.loads(data) for _, data in rest]
    ticks = [t["params"]["data"] for t in texts if t.get("method") == "notifications/message"]
    assert ticks == [f"tick {n}" for n in range(1, 6)]
    assert texts[-1]["id"] == 1
    assert texts[-1]["result"]["content"][0]["text"] == "6 ticks"
    assert [seq(i) for i, _ in rest] == list(range(seq(first[0]) + 1, seq(first[0]) + 1 + len(rest)))


async def test_cancel_reaches_the_instance_running_the_request(cluster: list[Instance]) -> None:
    a, b, c = cluster
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, a.url)
            body = rpc(9, "tools/call", {"name": "wait_for_cancel", "_meta": {"progressToken": "p"}})
            async with http.stream("POST", a.url, json=body, headers=headers) as post:
                events = Events(post)
                while (event := await events.next()) is not None and "progress" not in event[1]:
                    pass
                assert event is not None  # running on a, its progress seen
                cancel = rpc(None, "notifications/cancelled", {"requestId": 9, "reason": "test"})
                assert (await http.post(b.url, json=cancel, headers=headers)).status_code == 202
                rest = []
                while (event := await events.next()) is not None:  # a's stream ends: no answer
                    rest.append(event)
            assert all('"id":9' not in data.replace(" ", "") for _, data in rest)
            # the id is free again on every instance
            await call(http, c.url, headers, 9, "test_simple_text")
