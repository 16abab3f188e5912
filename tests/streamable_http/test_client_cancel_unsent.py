"""A request cancelled before any of it was sent never goes on the wire, and stops counting at once.

The Streamable HTTP client posts each request from a task of its own; one waiting for a connection (a slow
connect, a full pool) has nothing on the wire yet. Its cancel used to be held until the request was
written, so the request still went out once it got a connection, and the caller's `send` of the cancel
returned at once: a caller bounding its requests in flight (`mcpframe proxy URL`'s `max_in_flight`) then
posted the next request while the cancelled one's exchange still ran. Now such a request is dropped with
its cancel: its exchange ends when the cancel is sent, and neither reaches the server. The wait for a
connection is a gate in the test (a wrapping httpx transport, or the lean pool's connect), never timing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._remote_support import Stdio
from tests.streamable_http._client_support import Reply, Scripted, Seen, json_reply, result, serve_asgi

from mcpframe import core
from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport
from mcpframe.proxy.remote import proxy_remote

pytestmark = pytest.mark.anyio

CALL = "tools/call"
CANCELLED = "notifications/cancelled"


def request(rid: int) -> bytes:
    return core.encode_request(rid, CALL, {"name": "slow", "arguments": {}}) + b"\n"


def cancel(rid: int) -> bytes:
    return core.encode_notification(CANCELLED, {"requestId": rid}) + b"\n"


async def exchanges_end(transport: StreamableHTTPTransport, left: int) -> None:
    """Until no more than `left` exchanges run: a cancelled one leaves `in_flight` when its task next runs.

    Not `anyio.wait_all_tasks_blocked()`: uvicorn's main loop wakes every 0.1 s, and that wait (on asyncio,
    which looks again every 0.1 s) can fall in step with it and find it runnable every time, never returning.
    """
    while transport.in_flight > left:
        await anyio.sleep(0)


class Gate:
    """Where the first `tools/call` waits before any of it is sent, until `open`."""

    def __init__(self) -> None:
        self.open = anyio.Event()
        self.reached = anyio.Event()
        self.used = False

    async def hold(self) -> None:
        if not self.used:
            self.used = True
            self.reached.set()
            await self.open.wait()


class BeforeSending(httpx.AsyncBaseTransport):
    """Passes requests to `inner`; the first `tools/call` waits at `gate` before `inner` sees it."""

    def __init__(self, inner: httpx.AsyncBaseTransport, gate: Gate) -> None:
        self.inner = inner
        self.gate = gate

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("mcp-method") == CALL:
            await self.gate.hold()
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Recorder:
    """Records the POSTs (`(method, id or params)`) in arrival order; a request's answer waits for `answer`
    and the most requests it held unanswered at once is `peak`."""

    def __init__(self) -> None:
        self.order: list[tuple[str | None, Any]] = []
        self.answer = anyio.Event()
        self.running = 0
        self.peak = 0
        self.changed = anyio.Event()
        self.app = Scripted(self.handle)

    async def handle(self, seen: Seen) -> Reply:
        body = seen.body
        self.order.append((seen.method, body.get("id") if seen.method == CALL else body.get("params")))
        self.changed.set()
        self.changed = anyio.Event()
        if seen.method != CALL:
            return Reply(202)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await self.answer.wait()
        finally:
            self.running -= 1
        return json_reply(result(body["id"], {"content": []}))

    async def saw(self, entry: tuple[str | None, Any]) -> None:
        while entry not in self.order:
            await self.changed.wait()


CLIENTS = ["lean", "httpx", "httpx-auth", "asgi"]


class ReadsTheBody(httpx.Auth):
    """An auth that reads each request's body before it is sent (as one that may send it again does)."""

    requires_request_body = True

    async def async_auth_flow(self, request: httpx.Request) -> AsyncIterator[httpx.Request]:
        request.headers["authorization"] = "Bearer t"
        yield request


@contextlib.asynccontextmanager
async def held_transport(server: Recorder, client: str, gate: Gate) -> AsyncIterator[StreamableHTTPTransport]:
    """A transport whose first `tools/call` waits at `gate` with nothing sent: for the lean pool, in its
    connect (the first POST finds no idle connection); for httpx, before its transport sends anything."""
    async with contextlib.AsyncExitStack() as stack:
        http = None
        if client == "asgi":
            url = "http://in-process/mcp"
            inner: httpx.AsyncBaseTransport = httpx.ASGITransport(app=server.app)
        else:
            url = await stack.enter_async_context(serve_asgi(server.app))
            inner = httpx.AsyncHTTPTransport()
        if client != "lean":
            auth = ReadsTheBody() if client == "httpx-auth" else None
            client_http = httpx.AsyncClient(transport=BeforeSending(inner, gate), auth=auth)
            http = await stack.enter_async_context(client_http)
        options = HttpClientOptions(lean=client == "lean", get_stream=False)
        transport = await stack.enter_async_context(
            StreamableHTTPTransport(url, options=options, http_client=http)
        )
        if client == "lean":
            pool = transport.lean_pool
            assert pool is not None
            connect: Callable[[], Awaitable[Any]] = pool._connect

            async def held_connect() -> Any:
                await gate.hold()
                return await connect()

            pool._connect = held_connect  # type: ignore[method-assign]
        yield transport


@pytest.mark.parametrize("client", CLIENTS)
async def test_a_request_cancelled_while_waiting_for_a_connection_never_goes_out(client: str) -> None:
    server = Recorder()
    server.answer.set()
    gate = Gate()
    async with held_transport(server, client, gate) as transport:
        with anyio.fail_after(10):
            await transport.send(request(1))
            await gate.reached.wait()
            await transport.send(cancel(1))  # returns at once: nothing of request 1 was sent
            await exchanges_end(transport, 0)  # its exchange ended with the cancel
            gate.open.set()
            await transport.send(request(2))
            answer = json.loads(await transport.receive())
    assert answer["id"] == 2
    assert server.order == [(CALL, 2)]  # neither request 1 nor its cancel


async def test_the_proxy_never_runs_more_than_max_in_flight_after_a_cancel_of_an_unsent_request() -> None:
    """`proxy_remote(max_in_flight=1)`: request 1 waits for a connection, 2 waits for room; the client
    cancels 1. Request 2 is then posted, and request 1 never is: one request in flight at any time."""
    server = Recorder()
    gate = Gate()
    stdio = Stdio()
    async with (
        serve_asgi(server.app) as url,
        httpx.AsyncClient(transport=BeforeSending(httpx.AsyncHTTPTransport(), gate)) as http,
        StreamableHTTPTransport(url, http_client=http, options=HttpClientOptions(get_stream=False)) as remote,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(lambda: proxy_remote(stdio, remote, max_in_flight=1))
        with anyio.fail_after(10):
            await stdio.input.send(request(1))
            await gate.reached.wait()
            await stdio.input.send(request(2) + cancel(1))
            await server.saw((CALL, 2))
            await exchanges_end(remote, 1)
            assert remote.in_flight == 1  # request 2's exchange only
            gate.open.set()
            server.answer.set()
            assert (await stdio.answer(2))["result"] == {"content": []}
            await stdio.input.send(request(3))
            await stdio.answer(3)
        tg.cancel_scope.cancel()
    assert server.order == [(CALL, 2), (CALL, 3)]
    assert server.peak == 1
    assert [message["id"] for message in stdio.out] == [2, 3]
