"""The HTTP server's lanes (Sessions reused across POSTs) and its `Pipe`, including the raw ASGI routes."""

from __future__ import annotations

import anyio
import httpx
import pytest

from mcpframe.http import handling, sessions
from mcpframe.http.exchange import Exchange, LanePool
from mcpframe.http.pipe import Pipe
from mcpframe.http.server import StreamableHTTPServer

from ._server_support import asgi_client, call, initialize, messages, modern_meta, session_headers

pytestmark = pytest.mark.anyio

MODERN_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_pipe_keeps_order_ends_after_close_and_times_out() -> None:
    pipe = Pipe()
    assert pipe.get_nowait() is None
    assert await pipe.get(0.01) is None  # nothing came in time
    assert pipe.put(b"a")
    assert pipe.put(b"")  # empty chunks are not queued (b"" is the end)
    assert pipe.put(b"b")
    pipe.close()
    assert not pipe.put(b"c")
    assert [await pipe.get(), pipe.get_nowait(), await pipe.get()] == [b"a", b"b", b""]


async def test_pipe_wakes_a_waiting_reader() -> None:
    pipe = Pipe()
    got: list[bytes | None] = []

    async def read() -> None:
        got.append(await pipe.get())
        got.append(await pipe.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await anyio.sleep(0)
        pipe.put(b"x")
        await anyio.sleep(0)
        pipe.close()
    assert got == [b"x", b""]


async def test_sequential_posts_of_a_session_reuse_one_lane() -> None:
    async with asgi_client(response_mode="auto") as (client, http):
        headers = session_headers(await initialize(client))
        session = next(iter(http.sessions.sessions.values()))
        for rid in range(5):
            response = await client.post(
                "/mcp", json=call("echo", {"text": f"t{rid}"}, rid=rid), headers=headers
            )
            assert response.json()["result"]["content"][0]["text"] == f"t{rid}"
        assert session.lanes is not None
        idle = list(session.lanes._idle)
        assert len(idle) == 1  # one Session answered all five
        assert idle[0].session.closed is False
        assert session.router.exchanges == {}


async def test_a_cancelled_lane_is_not_reused() -> None:
    async with asgi_client(response_mode="auto", stream_after=60.0) as (client, http):
        headers = session_headers(await initialize(client))
        session = next(iter(http.sessions.sessions.values()))
        async with anyio.create_task_group() as tg:

            async def slow_call() -> None:
                await client.post("/mcp", json=call("wait", rid=42), headers=headers)

            tg.start_soon(slow_call)
            with anyio.fail_after(5):
                await http.server.started.wait()  # type: ignore[attr-defined]
            lanes = session.lanes
            assert lanes is not None
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}}
            assert (await client.post("/mcp", json=cancel, headers=headers)).status_code == 202
        assert lanes._idle == []
        response = await client.post("/mcp", json=call("echo", {"text": "after"}, rid=42), headers=headers)
        assert response.json()["result"]["content"][0]["text"] == "after"  # the id is free again


async def test_stateless_requests_share_a_lane_pool() -> None:
    async with asgi_client() as (client, http):
        for rid in range(3):
            body = call("echo", {"text": str(rid)}, rid=1, **modern_meta())
            response = await client.post("/mcp", json=body, headers=MODERN_HEADERS)
            answers = (
                messages(response.text)
                if response.headers["content-type"].startswith("text/")
                else [response.json()]
            )
            assert answers[-1]["result"]["content"][0]["text"] == str(rid)
        pool = http.posts._stateless
        assert pool is not None
        assert len(pool._idle) == 1


async def test_routes_outside_the_endpoint() -> None:
    async with asgi_client() as (client, _):
        assert (await client.get("/elsewhere")).status_code == 404
        refused = await client.put("/mcp", content=b"{}")
        assert refused.status_code == 405
        assert refused.headers["allow"] == "GET, POST, DELETE"


async def test_aborting_an_ended_exchange_leaves_its_lane_alone() -> None:
    async with asgi_client(response_mode="auto") as (client, http):
        headers = session_headers(await initialize(client))
        session = next(iter(http.sessions.sessions.values()))
        assert session.lanes is not None
        lane = session.lanes.acquire()
        exchange = Exchange(lane, session.new_stream(), [7])
        exchange.close()  # answered; a late abort (a client that left just then) must not end the lane
        await exchange.abort()
        assert not lane.session.closed
        assert lane.reusable
        lane.done()
        response = await client.post("/mcp", json=call("echo", {"text": "still"}, rid=7), headers=headers)
        assert response.json()["result"]["content"][0]["text"] == "still"


async def test_a_stateless_request_runs_on_a_connection_bound_to_its_session() -> None:
    async with asgi_client(response_mode="auto") as (client, http):
        server = http.server
        headers = {**MODERN_HEADERS, "mcp-name": "wait"}
        async with anyio.create_task_group() as tg:

            async def slow_call() -> None:
                await client.post("/mcp", json=call("wait", rid=1, **modern_meta()), headers=headers)

            tg.start_soon(slow_call)
            with anyio.fail_after(5):
                await server.started.wait()  # type: ignore[attr-defined]
            (conn,) = server._connections  # bound while its request runs (Server subclasses use conn.session)
            assert conn.session is not None
            server.gate.set()  # type: ignore[attr-defined]
        assert server._connections == set()  # closed with its exchange


async def _in_flight_at_once(client: httpx.AsyncClient, http: StreamableHTTPServer, count: int) -> LanePool:
    """`count` gated `wait` calls in flight at once in one session, then released; the session's lane pool."""
    headers = session_headers(await initialize(client))
    await _burst(client, http, headers, count)
    for rid in range(3):  # later calls
        await _echo(client, headers, rid)
    return http.posts.lanes(next(iter(http.sessions.sessions.values())))


async def _burst(
    client: httpx.AsyncClient,
    http: StreamableHTTPServer,
    headers: dict[str, str],
    count: int,
    first: int = 10,
) -> None:
    """`count` gated `wait` calls (ids from `first`) in flight at once in the session, then released."""
    session = next(iter(http.sessions.sessions.values()))
    http.server.gate = gate = anyio.Event()  # type: ignore[attr-defined]
    answers: list[str] = []

    async def wait(rid: int) -> None:
        response = await client.post("/mcp", json=call("wait", rid=rid), headers=headers)
        answers.append(response.json()["result"]["content"][0]["text"])

    async with anyio.create_task_group() as tg:
        for rid in range(first, first + count):
            tg.start_soon(wait, rid)
        with anyio.fail_after(5):
            while len(session.router.exchanges) < count:  # every call is running on a lane of its own
                await anyio.sleep(0.001)
        gate.set()
    assert answers == ["released"] * count


async def _echo(client: httpx.AsyncClient, headers: dict[str, str], rid: int) -> None:
    response = await client.post("/mcp", json=call("echo", {"text": f"t{rid}"}, rid=rid), headers=headers)
    assert response.json()["result"]["content"][0]["text"] == f"t{rid}"


async def test_a_session_keeps_as_many_idle_lanes_as_it_had_requests_in_flight() -> None:
    # issue 11: with 4 idle lanes kept, each request past the 4th in flight made a new lane Session (and
    # the lean server's fast path, finding no idle lane, sent it down the full path): CPU per call grew
    # with the requests in flight
    async with asgi_client(response_mode="auto") as (client, http):
        pool = await _in_flight_at_once(client, http, 10)
        assert pool.peak == 10
        assert pool.live == 10  # the later calls were answered on kept lanes: no new Session
        assert len(pool._idle) == 10


async def test_the_idle_lanes_a_session_keeps_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handling, "_SESSION_LANES_MOST", 6)  # 64 in a server, small here
    async with asgi_client(response_mode="auto") as (client, http):
        pool = await _in_flight_at_once(client, http, 9)
        assert pool.peak == 9
        assert len(pool._idle) == 6  # the three past the cap ended
        with anyio.fail_after(5):
            while pool.live > 6:
                await anyio.sleep(0.001)


async def test_the_idle_lanes_of_a_burst_end_once_a_sweep_finds_them_unused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # issue: a session that once had 64 requests in flight kept 64 idle lanes (64 Sessions) for its life
    monkeypatch.setattr(sessions, "LANE_SWEEP", 3600.0)  # the reaper's own sweeps stay out of the test
    async with asgi_client(response_mode="auto", idle_timeout=None) as (client, http):
        pool = await _in_flight_at_once(client, http, 10)
        assert (pool.live, len(pool._idle)) == (10, 10)
        assert http.sessions.sweep_lanes() == 0  # the first sweep only marks what is idle
        await _echo(client, _headers_of(http), 3)  # one lane at a time in use: the top of the stack
        assert http.sessions.sweep_lanes() == 6  # the six never taken since, past the four kept
        assert len(pool._idle) == 4
        with anyio.fail_after(5):
            while pool.live > 4:  # their Sessions end
                await anyio.sleep(0)
        assert http.sessions.sweep_lanes() == 0  # the baseline stays
        await _echo(client, _headers_of(http), 4)
        assert pool.live == 4  # answered on a kept lane


async def test_a_session_that_keeps_its_requests_in_flight_keeps_its_idle_lanes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sessions, "LANE_SWEEP", 3600.0)
    async with asgi_client(response_mode="auto", idle_timeout=None) as (client, http):
        pool = await _in_flight_at_once(client, http, 10)
        headers = _headers_of(http)
        for round_ in range(3):  # as many in flight again between each two sweeps: nothing ends
            assert http.sessions.sweep_lanes() == 0
            await _burst(client, http, headers, 10, first=100 + 10 * round_)
        assert http.sessions.sweep_lanes() == 0
        assert (pool.peak, pool.live, len(pool._idle)) == (10, 10, 10)  # no lane Session made anew


def _headers_of(http: StreamableHTTPServer) -> dict[str, str]:
    """The request headers of the (only) session of `http`."""
    return session_headers(next(iter(http.sessions.sessions.values())).id)
