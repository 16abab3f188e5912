"""A cancel the Streamable HTTP client holds back because its request is being written.

The request's body is gated on the client's side (a wrapping httpx transport whose body stream, once the
transport began handing it on, waits for `open`), so the cancel is sent while the request is partly sent but
not written: the held path, decided by the test, not by timing. The cancel goes once the request was
written (its `send` returns at once: it is held in a task, and `held_cancel` is set once it went); a
request that fails before being written lets its cancel go (harmless) rather than hang; a client closed
with a cancel held ends at once. (A request none of which was sent is dropped with its cancel instead:
`test_client_cancel_unsent.py`.)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from tests._blocked import all_blocked
from tests.streamable_http._client_support import (
    Reply,
    Scripted,
    Seen,
    json_reply,
    result,
    serve_asgi,
)

from mcpframe import core
from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport

pytestmark = pytest.mark.anyio

CALL = "tools/call"
CANCELLED = "notifications/cancelled"
REQUEST = core.encode_request(1, CALL, {"name": "slow", "arguments": {}}) + b"\n"
CANCEL = core.encode_notification(CANCELLED, {"requestId": 1}) + b"\n"


class Gated(httpx.AsyncBaseTransport):
    """Passes requests to `inner`; the body of a `tools/call`, once `inner` began sending it, is handed on
    only once `open` is set (or, with `fail`, never: the request fails with a write error before its body
    is written)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, *, fail: bool = False) -> None:
        self.inner = inner
        self.fail = fail
        self.open = anyio.Event()
        self.at_gate = anyio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("mcp-method") == CALL:
            request.stream = _Later(request.stream, self)  # type: ignore[arg-type]
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Later(httpx.AsyncByteStream):
    def __init__(self, stream: Any, gate: Gated) -> None:
        self.stream = stream
        self.gate = gate

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream:  # the client's body: taking its chunk marks the request as being sent
            self.gate.at_gate.set()
            await self.gate.open.wait()
            if self.gate.fail:
                raise httpx.WriteError("the connection broke")
            yield chunk


class ReadsTheBody(httpx.Auth):
    """An auth that reads each request's body before it is sent (as one that may send it again does)."""

    requires_request_body = True

    async def async_auth_flow(self, request: httpx.Request) -> AsyncIterator[httpx.Request]:
        request.headers["authorization"] = "Bearer t"
        yield request


class Recorder:
    """Records each POST's method in arrival order; a request's answer waits for its cancel."""

    def __init__(self) -> None:
        self.order: list[str | None] = []
        self.cancel_seen = anyio.Event()
        self.app = Scripted(self.handle)

    async def handle(self, seen: Seen) -> Reply:
        if seen.body is None:  # a POST cut before its body (`fail`): the server never had a request
            return Reply(400)
        self.order.append(seen.method)
        if seen.method == CANCELLED:
            self.cancel_seen.set()
            return Reply(202)
        await self.cancel_seen.wait()
        return json_reply(result(seen.body["id"], {"content": []}))


@contextlib.asynccontextmanager
async def gated_transport(
    server: Recorder, client: str, *, fail: bool = False
) -> AsyncIterator[tuple[StreamableHTTPTransport, Gated]]:
    async with contextlib.AsyncExitStack() as stack:
        inner: httpx.AsyncBaseTransport
        if client == "asgi":
            url = "http://in-process/mcp"
            inner = httpx.ASGITransport(app=server.app)
        else:
            url = await stack.enter_async_context(serve_asgi(server.app))
            inner = httpx.AsyncHTTPTransport()
        gated = Gated(inner, fail=fail)
        auth = ReadsTheBody() if client == "httpx-auth" else None
        http = await stack.enter_async_context(httpx.AsyncClient(transport=gated, auth=auth))
        options = HttpClientOptions(get_stream=False)
        transport = StreamableHTTPTransport(url, options=options, http_client=http)
        yield await stack.enter_async_context(transport), gated


CLIENTS = ["httpx", "httpx-auth", "asgi"]


@pytest.mark.parametrize("client", CLIENTS)
async def test_a_held_cancel_goes_once_its_request_was_written(client: str) -> None:
    server = Recorder()
    async with gated_transport(server, client) as (transport, gated):
        with anyio.fail_after(10):
            await transport.send(REQUEST)
            await gated.at_gate.wait()
            await transport.send(CANCEL)  # returns at once: held until the request is written
            taken = transport.held_cancel(1)
            assert taken is not None
            await all_blocked()
            assert server.order == []
            assert not taken.is_set()
            assert transport.in_flight == 1  # its exchange runs until its cancel went
            gated.open.set()
            await server.cancel_seen.wait()
            await taken.wait()
            assert transport.held_cancel(1) is None
    assert server.order == [CALL, CANCELLED]


@pytest.mark.parametrize("client", CLIENTS)
async def test_a_request_failing_before_it_was_written_lets_its_held_cancel_go(client: str) -> None:
    server = Recorder()
    async with gated_transport(server, client, fail=True) as (transport, gated):
        with anyio.fail_after(10):
            await transport.send(REQUEST)
            await gated.at_gate.wait()
            async with anyio.create_task_group() as tg:
                tg.start_soon(transport.send, CANCEL)
                await all_blocked()
                gated.open.set()
                await server.cancel_seen.wait()  # harmless: the server never had the request
            while transport.in_flight:
                await anyio.sleep(0.001)
    assert server.order == [CANCELLED]


async def test_a_client_closed_with_a_cancel_held_ends_at_once() -> None:
    server = Recorder()
    with anyio.fail_after(10):
        # the task group outlives the transport: the held cancel's `send` returns once the transport closed
        async with anyio.create_task_group() as tg, gated_transport(server, "httpx") as (transport, gated):
            await transport.send(REQUEST)
            await gated.at_gate.wait()
            tg.start_soon(transport.send, CANCEL)
            await all_blocked()
        assert transport.in_flight == 0
    assert server.order == []
