"""Sessions in Redis: DELETE removes them everywhere, idle ones expire, Redis down or slow gives 503 and
the instances recover when it is back; the 2026-07-28 era through the balancer; `--stateless`."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
import redis as redis_sync

from mcpframe.http import connect

from .support import HEADERS, INITIALIZE, Events, Instance, RedisProcess, RoundRobin, rpc
from .test_streams import call, open_session

pytestmark = pytest.mark.anyio


def state_key(session_id: str) -> str:
    return f"mcpframe:s:{session_id}"


async def test_delete_removes_the_session_everywhere(cluster: list[Instance]) -> None:
    a, b, c = cluster
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, a.url)
            for n, instance in enumerate(cluster):  # every instance now holds a copy
                await call(http, instance.url, headers, n + 1, "test_simple_text")
            async with http.stream("GET", c.url, headers=headers) as get:
                events = Events(get)
                assert await events.next() is not None  # the priming event: the stream is open on c
                assert (await http.delete(b.url, headers=headers)).status_code == 200
                while await events.next() is not None:  # and it ends: the session is gone
                    pass
            for instance in cluster:
                ping = await http.post(instance.url, json=rpc(7, "ping"), headers=headers)
                assert ping.status_code == 404, instance.url
                assert ping.json()["error"]["message"] == "Not Found: unknown or expired session"


async def test_idle_sessions_expire_in_redis(cluster: list[Instance], redis: RedisProcess) -> None:
    a, b, _ = cluster
    store = redis_sync.Redis.from_url(redis.url)
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, a.url)
            key = state_key(headers["mcp-session-id"])
            store.pexpire(key, 10_000)
            await call(http, b.url, headers, 1, "test_simple_text")
            ttl = store.pttl(key)
            assert 10_000 < ttl <= 1_800_000  # refreshed by the request to the --idle-timeout (1800 s)
            store.pexpire(key, 1)  # as if the idle timeout had passed
            while store.exists(key):
                await anyio.sleep(0.005)  # Redis expires the key on its own clock
            ping = await http.post(b.url, json=rpc(2, "ping"), headers=headers)
            assert ping.status_code == 404
            ping = await http.post(a.url, json=rpc(3, "ping"), headers=headers)  # its creator too
            assert ping.status_code == 404
    store.close()


async def test_modern_era_through_round_robin(cluster: list[Instance]) -> None:
    balancer = RoundRobin([i.port for i in cluster])
    async with (
        httpx.AsyncClient(transport=balancer, timeout=30) as http,
        connect(cluster[0].url, transport="streamable-http", http_client=http, mode="modern") as client,
    ):
        with anyio.fail_after(30):
            for _ in range(3):
                result = await client.call_tool("test_simple_text")
                assert result["content"][0]["text"]
            progress: list[float] = []
            await client.call_tool("test_tool_with_progress", on_progress=lambda p, t, m: progress.append(p))
            assert progress == [0, 50, 100]
    assert len({port for _, port in balancer.sent}) == 3


async def test_subscribe_and_updated_through_round_robin(cluster: list[Instance]) -> None:
    updated = anyio.Event()
    seen: list[Any] = []

    async def on_notification(method: str, params: Any) -> None:
        seen.append(params)
        if method == "notifications/resources/updated":
            assert params == {"uri": "test://watched-resource"}
            updated.set()

    balancer = RoundRobin([i.port for i in cluster])
    async with (
        httpx.AsyncClient(transport=balancer, timeout=30) as http,
        connect(
            cluster[0].url,
            transport="streamable-http",
            http_client=http,
            mode="legacy",
            notification_handler=on_notification,
        ) as client,
    ):
        with anyio.fail_after(30):
            await client.subscribe("test://watched-resource")
            for _ in range(3):  # whichever instance runs it, the GET stream's instance delivers it
                await client.call_tool("touch_watched")
            await updated.wait()


async def test_redis_slow_or_down_is_503_and_instances_recover(
    cluster: list[Instance], redis: RedisProcess
) -> None:
    a, b, _ = cluster
    assert redis.child is not None
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(60):
            headers = await open_session(http, a.url)
            os.kill(redis.child.pid, signal.SIGSTOP)  # slow: Redis accepts nothing, answers nothing
            try:
                reply = await http.post(b.url, json=rpc(1, "ping"), headers=headers)
            finally:
                os.kill(redis.child.pid, signal.SIGCONT)
            assert reply.status_code == 503
            error = reply.json()["error"]
            assert "Redis at redis://127.0.0.1" in error["message"]
            assert "in time" in error["message"]
            await call(http, b.url, headers, 2, "test_simple_text")  # back: the same session goes on
            redis.stop()  # down
            try:
                reply = await http.post(a.url, json=INITIALIZE, headers=HEADERS)
                assert reply.status_code == 503
                assert "Redis at" in reply.json()["error"]["message"]
                reply = await http.post(b.url, json=rpc(3, "ping"), headers=headers)
                assert reply.status_code == 503
            finally:
                redis.start()
            # Redis restarted empty (no persistence): the old session is gone, a new one works everywhere
            assert (await http.post(b.url, json=rpc(4, "ping"), headers=headers)).status_code == 404
            headers = await open_session(http, a.url)
            await call(http, b.url, headers, 5, "test_simple_text")


@pytest.fixture(scope="module")
def stateless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Instance]]:
    logs = tmp_path_factory.mktemp("stateless")
    instances = [Instance(["--stateless"], logs / f"s{n}.log") for n in range(2)]
    yield instances
    for instance in instances:
        instance.stop()


async def test_stateless_mode_serves_handshake_era_clients(stateless: list[Instance]) -> None:
    a, b = stateless
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            reply = await http.post(a.url, json=INITIALIZE, headers=HEADERS)
            assert reply.status_code == 200
            assert "mcp-session-id" not in reply.headers
            assert (await http.get(b.url, headers=HEADERS)).status_code == 405
            assert (await http.delete(b.url, headers=HEADERS)).status_code == 405
            note = await http.post(b.url, json=rpc(None, "notifications/initialized"), headers=HEADERS)
            assert note.status_code == 202
            await call(http, b.url, HEADERS, 1, "test_simple_text")  # no initialize on b: none needed
    balancer = RoundRobin([i.port for i in stateless])
    async with (
        httpx.AsyncClient(transport=balancer, timeout=30) as http,
        connect(a.url, transport="streamable-http", http_client=http, mode="legacy") as client,
    ):
        with anyio.fail_after(30):
            progress: list[float] = []
            await client.call_tool("test_tool_with_progress", on_progress=lambda p, t, m: progress.append(p))
            assert progress == [0, 50, 100]
            assert (await client.call_tool("test_simple_text"))["content"]


async def test_redis_stalling_mid_stream_costs_resumability_not_the_answer(
    cluster: list[Instance], redis: RedisProcess
) -> None:
    a = cluster[0]
    assert redis.child is not None
    async with httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, a.url)
            # 100 ms between ticks: the answer comes 0.5 s after tick 0, well after the stall below.
            body = rpc(1, "tools/call", {"name": "tick", "arguments": {"count": 5, "ms": 100}})
            async with http.stream("POST", a.url, json=body, headers=headers) as post:
                events = Events(post)
                assert await events.next() is not None  # priming
                assert await events.next() is not None  # tick 0, stored
                os.kill(redis.child.pid, signal.SIGSTOP)
                try:
                    rest = []
                    while (event := await events.next()) is not None:
                        rest.append(event)
                finally:
                    os.kill(redis.child.pid, signal.SIGCONT)
            # Ticks the server stored before the stall took effect keep their ids (how many depends on
            # scheduling); from the first one Redis did not take, every event is sent live, with no id.
            ids = [event_id for event_id, _ in rest]
            assert len(ids) == 5, rest
            stored = next(n for n, event_id in enumerate(ids) if event_id is None)
            assert all(event_id is not None for event_id in ids[:stored]), ids
            assert ids[stored:] == [None] * (5 - stored), ids
            assert '"result"' in rest[-1][1]  # the answer itself, live
            await call(http, a.url, headers, 2, "test_simple_text")  # the instance and session go on
