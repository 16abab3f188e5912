"""Flow control and the end of a legacy SSE session: a stalled reader holds its session back within the
bounds and loses nothing; a client that leaves ends its session (handlers cancelled, registry emptied);
a shutdown ends the streams."""

from __future__ import annotations

import anyio
import httpx
import pytest
from tests._blocked import all_blocked

from mcpframe.http.server import HttpOptions, StreamableHTTPServer
from mcpframe.server import Context, Server
from mcpframe.session import SessionOptions

from ._server_support import AsgiStream, asgi_post, init_body, live, make_server, open_stream

pytestmark = pytest.mark.anyio

FLOOD = 2000
BOUND = 4096  # bytes: the Session's outbox mark, and so the stream's queue bound


def flooding_server() -> tuple[Server, list[int]]:
    server = make_server()
    sent: list[int] = []

    @server.tool
    async def flood(count: int, ctx: Context) -> str:
        """Send `count` log notifications as fast as the session takes them."""
        for n in range(count):
            await ctx.info(f"note {n}")
            sent.append(n)
        return "flooded"

    return server, sent


async def _settled(sent: list[int]) -> None:
    """Until the handler has made no progress for many loop turns (it waits for room)."""
    with anyio.fail_after(10):
        quiet = 0
        last = -1
        while quiet < 200:
            quiet = quiet + 1 if len(sent) == last else 0
            last = len(sent)
            await anyio.lowlevel.checkpoint()


async def test_a_reader_that_stops_holds_the_session_back_within_the_bound() -> None:
    server, sent = flooding_server()
    options = HttpOptions(session_options=SessionOptions(outbox_high_water=BOUND))
    app = StreamableHTTPServer(server, options)
    stream = AsgiStream(app)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stream.run)
        await stream.wait_for(b"\n\n")
        target = stream.endpoint
        assert (await asgi_post(app, target, init_body()))[0] == 202
        await stream.wait_for(b'"protocolVersion"')
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await asgi_post(app, target, note))[0] == 202
        assert app.legacy is not None
        (legacy,) = app.legacy.sessions.values()

        stream.gate.clear()  # the client stops reading
        params = {"name": "flood", "arguments": {"count": FLOOD}}
        call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
        assert (await asgi_post(app, target, call))[0] == 202
        await _settled(sent)
        assert 0 < len(sent) < FLOOD  # back-pressure: the handler waits for room
        assert legacy.transport.outbound.peak <= BOUND
        assert legacy.session.outbox_bytes <= BOUND + 1024  # the Session's own mark (plus one frame)

        stream.gate.set()  # the client reads again: everything arrives, in order
        await stream.wait_for(b'"flooded"')
        stream.leave()
    notes = [e["params"]["data"] for e in stream.events() if e.get("method") == "notifications/message"]
    assert notes == [f"note {n}" for n in range(FLOOD)]
    assert legacy.transport.outbound.peak <= BOUND


async def test_a_client_that_leaves_ends_its_session() -> None:
    server = make_server()
    async with live(server) as (base, app), httpx.AsyncClient(timeout=20) as http:
        assert app.legacy is not None
        async with open_stream(http, base) as stream:
            await stream.initialize()
            assert len(app.legacy) == 1
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait"}}
            assert (await stream.post(call)).status_code == 202
            with anyio.fail_after(10):
                await server.started.wait()  # type: ignore[attr-defined]
            endpoint = stream.endpoint
        with anyio.fail_after(10):
            await server.ended.wait()  # type: ignore[attr-defined]  # the handler was cancelled
            while len(app.legacy):
                await anyio.lowlevel.checkpoint()
        assert not server.gate.is_set()  # type: ignore[attr-defined]  # it never finished on its own
        gone = await http.post(base + endpoint, json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert gone.status_code == 404


async def test_a_shutdown_ends_the_streams_after_their_answers() -> None:
    app = StreamableHTTPServer(make_server())
    stream = AsgiStream(app)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stream.run)
        await stream.wait_for(b"\n\n")
        assert (await asgi_post(app, stream.endpoint, init_body()))[0] == 202
        await stream.wait_for(b'"protocolVersion"')
        app.end_streams()
        with anyio.fail_after(10):
            while app.legacy is not None and len(app.legacy):
                await anyio.lowlevel.checkpoint()
    assert stream.events()[0]["id"] == 1  # run() returned: the response ended by itself


async def test_posts_wait_while_the_session_reads_nothing() -> None:
    server = make_server()
    session_options = SessionOptions(max_in_flight=1)
    app = StreamableHTTPServer(server, HttpOptions(max_body=1024, session_options=session_options))
    stream = AsgiStream(app)
    statuses: list[int] = []

    async def post(rid: int) -> None:
        params = {"name": "echo", "arguments": {"text": "x" * 200}}
        call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
        statuses.append((await asgi_post(app, stream.endpoint, call))[0])

    async with anyio.create_task_group() as tg:
        tg.start_soon(stream.run)
        await stream.wait_for(b"\n\n")
        assert (await asgi_post(app, stream.endpoint, init_body()))[0] == 202
        await stream.wait_for(b'"protocolVersion"')
        assert app.legacy is not None
        (legacy,) = app.legacy.sessions.values()
        blocker = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait"}}
        assert (await asgi_post(app, stream.endpoint, blocker))[0] == 202
        with anyio.fail_after(10):
            await server.started.wait()  # type: ignore[attr-defined]  # the one handler slot is taken
        posts = anyio.create_task_group()
        async with posts:
            for rid in range(10, 30):  # ~5 KiB of requests, the queue holds 1 KiB
                posts.start_soon(post, rid)
            await all_blocked()
            assert len(statuses) < 20  # some POSTs wait for their 202: back-pressure on the client
            assert legacy.transport.inbound.peak <= 1024
            server.gate.set()  # type: ignore[attr-defined]
        assert statuses == [202] * 20
        for rid in (2, *range(10, 30)):  # every request is answered, none lost
            await stream.wait_for(b'"id":%d,"result"' % rid)
        stream.leave()
    assert legacy.transport.inbound.peak <= 1024
