"""The shortened first quiet wait of `--sse-close-idle` (tests/proxy/test_listen_poll_close.py) is only
for a POST that stayed quiet: a message from the child, before the SSE response opens or after its
priming event, ends the quiet and the wait is the full `close_idle`; and only the first wait is shortened.
As there, the tests look at which timer (`mcpframe.http.deadlines`) a response waits on, not at the clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import in_process_proxy
from tests.proxy.conftest import PEER
from tests.proxy.test_listen_poll_close import BOTH, CLOSE_IDLE, STREAM_AFTER, TOKEN, _live, _session

from mcpframe.http.events import MemoryEventStore
from mcpframe.http.headers import Accepts
from mcpframe.http.options import HttpOptions
from mcpframe.http.responses import SseReply
from mcpframe.http.streams import KEEPALIVE, Stream
from mcpframe.proxy.listen_bridge import Route

pytestmark = pytest.mark.anyio

SHORT = 1.25  # a shortened first wait, told apart from CLOSE_IDLE by its timer
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}'


async def _waiting_on(*waits: float) -> None:
    """Until a response waits on a timer of one of `waits` seconds."""
    with anyio.fail_after(10):
        while not any(_live(wait) for wait in waits):
            await anyio.sleep(0.001)


class _Client:
    """The ASGI side of an `SseReply`: records the body parts; a client that never leaves."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.on_part: Callable[[int], Awaitable[None]] | None = None

    async def receive(self) -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            self.parts.append(message["body"])
            if self.on_part is not None:
                await self.on_part(len(self.parts))


async def test_a_message_right_after_the_priming_event_ends_the_shortened_wait() -> None:
    """The child's notification reaches the response after it wrote the priming event but before its
    first wait: that wait is the full `close_idle` (the stream is no longer quiet), not `first_wait`."""
    stream = Stream("s1", MemoryEventStore())
    reader = await stream.attach(retry_ms=1000)
    reply = SseReply(stream, reader, keepalive=60.0, close_idle=CLOSE_IDLE, first_wait=SHORT)
    client = _Client()

    async def on_part(count: int) -> None:
        if count == 1:  # the priming event is out: the message comes now
            await stream.emit(NOTE, response=False)

    client.on_part = on_part
    async with anyio.create_task_group() as tg:
        tg.start_soon(reply, client.receive, client.send)
        await _waiting_on(CLOSE_IDLE, SHORT)
        assert b"retry: 1000" in client.parts[0]
        assert b"notifications/message" in b"".join(client.parts[1:])
        assert _live(CLOSE_IDLE) == 1
        assert _live(SHORT) == 0
        stream.detach(reader)  # the client leaves: the response ends
    assert client.parts[-1] == b""


async def test_only_the_first_wait_is_shortened() -> None:
    """The shortened first wait runs out (a keepalive is written: the stream is not resumable, so it is
    not closed); the next wait is the full one."""
    first = 0.02
    stream = Stream(None, None)
    reader = await stream.attach(retry_ms=None)
    reply = SseReply(stream, reader, keepalive=CLOSE_IDLE, first_wait=first)
    client = _Client()
    async with anyio.create_task_group() as tg:
        tg.start_soon(reply, client.receive, client.send)
        with anyio.fail_after(10):
            while KEEPALIVE not in client.parts:
                await anyio.sleep(0.001)
        await _waiting_on(CLOSE_IDLE, first)
        assert _live(CLOSE_IDLE) == 1
        assert _live(first) == 0
        assert client.parts.count(KEEPALIVE) == 1
        stream.detach(reader)
    assert client.parts[-1] == b""


async def test_a_route_whose_child_spoke_after_its_hold_gets_no_shortened_wait(
    http: httpx.AsyncClient,
) -> None:
    """`PostHandler.answer` for a POST whose hold ran out (`late`, `held`) while a message from the child
    came on its stream before the answer was built: no shortened first wait; a quiet one gets it."""
    options = HttpOptions(close_idle_streams=CLOSE_IDLE)
    async with in_process_proxy(PEER, http=options) as proxy:
        headers = await _session(http, proxy.url)
        session = proxy.app.sessions.get(headers["mcp-session-id"])
        assert session is not None
        accepts = Accepts(json=True, sse=True)
        held = 0.5
        for spoke in (False, True):
            stream = Stream(session.id, session.store)
            route = Route(stream, [100 + spoke], [])
            if spoke:
                await stream.emit(NOTE, response=False)
            reply = await proxy.app.posts.answer(route, session, accepts, {}, None, late=True, held=held)
            assert isinstance(reply, SseReply)
            assert reply.first_wait == (None if spoke else CLOSE_IDLE - held)
            stream.detach(reply.reader)
            assert reply.on_end is not None
            reply.on_end()  # the response was never written: what its end does
            route.close()


@pytest.mark.parametrize("mode", ["resumable", "auto"])
@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "full path"])
async def test_a_post_whose_child_speaks_at_once_gets_the_full_first_wait(
    http: httpx.AsyncClient, mode: str, fast: bool
) -> None:
    """`ask` has the child send the client a request at once, before any hold or `stream_after` runs out
    (on the fast path, the POST is upgraded to the full path by that message): the SSE response carries
    it, then waits the whole `CLOSE_IDLE`."""
    options = HttpOptions(response_mode=mode, stream_after=STREAM_AFTER, close_idle_streams=CLOSE_IDLE)
    async with in_process_proxy(PEER, http=options) as proxy:
        headers = await _session(http, proxy.url)
        shortened = CLOSE_IDLE - (STREAM_AFTER if mode == "auto" else proxy.app.fast.sse_hold)
        params = {"method": "roots/list", **({} if fast else TOKEN)}
        ask = {"jsonrpc": "2.0", "id": 5, "method": "ask", "params": params}
        with anyio.fail_after(10):
            async with http.stream("POST", proxy.url, json=ask, headers={**BOTH, **headers}) as r:
                assert r.status_code == 200
                assert r.headers["content-type"] == "text/event-stream"
                seen = b""
                chunks = r.aiter_bytes()
                while b"roots/list" not in seen:
                    seen += await chunks.__anext__()
                await _waiting_on(CLOSE_IDLE, shortened)
                assert _live(CLOSE_IDLE) == 1
                assert _live(shortened) == 0
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
                cancelled = await http.post(proxy.url, json=cancel, headers={**BOTH, **headers})
                assert cancelled.status_code == 202
                rest = b"".join([chunk async for chunk in chunks])
                assert b'"result"' not in rest
        assert proxy.app.fast.taken == (1 if fast else 0)
        assert proxy.app.posts.admission.running == 0
