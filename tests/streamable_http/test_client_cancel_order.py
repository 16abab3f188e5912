"""The Streamable HTTP client never lets a request's `notifications/cancelled` overtake the request itself.

A request is posted from a task of its own and its cancel from the caller's `send`: two POSTs on two
connections, so without care the server may get the cancel first, ignore it (an unknown request) and then
run the request uncancelled. A scripted server records the order the POSTs reach it; the request's POST is
held on the client's side, its body begun but not written (a wrapping httpx transport), until the cancel was
sent, so the order is decided by the transport alone, never by timing.
"""

from __future__ import annotations

import contextlib
import json
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


def _request(rid: int) -> bytes:
    return core.encode_request(rid, CALL, {"name": "slow", "arguments": {}}) + b"\n"


def _cancel(rid: int) -> bytes:
    return core.encode_notification(CANCELLED, {"requestId": rid}) + b"\n"


class Recorder:
    """The scripted server: records each POST's method (and request id) in arrival order. A request's
    answer waits for `answer_after` (when set), so its response head comes only once that event is set."""

    def __init__(self) -> None:
        self.order: list[tuple[str | None, Any]] = []
        self.request_seen = anyio.Event()
        self.cancel_seen = anyio.Event()
        self.answer_after: anyio.Event | None = None
        self.busy = 0  # requests answered 503 (`Retry-After: 0`: send it again) before one is taken
        self.app = Scripted(self.handle)

    async def handle(self, seen: Seen) -> Reply:
        body = seen.body
        params = body.get("params") if isinstance(body, dict) else None
        self.order.append((seen.method, body.get("id") if seen.method == CALL else params))
        if seen.method == CANCELLED:
            self.cancel_seen.set()
            return Reply(202)
        if self.busy:
            self.busy -= 1
            return Reply(503, {"retry-after": "0"})
        self.request_seen.set()
        if self.answer_after is not None:
            await self.answer_after.wait()
        return json_reply(result(body["id"], {"content": []}))


class Holding(httpx.AsyncBaseTransport):
    """Passes requests to a real transport; the POSTs of a request (a `tools/call`) past the first
    `pass_first` have their body, once the transport began sending it, wait for `release`, as one stuck
    behind a slow reader would."""

    def __init__(self, pass_first: int = 0) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.release = anyio.Event()
        self.holding = anyio.Event()
        self.passed = pass_first

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("mcp-method") == CALL:  # the body is not read here: that would send it
            if self.passed:
                self.passed -= 1
            else:
                request.stream = _HeldBody(request.stream, self)  # type: ignore[arg-type]
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _HeldBody(httpx.AsyncByteStream):
    def __init__(self, stream: Any, holding: Holding) -> None:
        self.stream = stream
        self.holding = holding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream:  # taking the client's chunk marks the request as being sent
            self.holding.holding.set()
            await self.holding.release.wait()
            yield chunk


async def cancel_while_held(server: Recorder, holding: Holding) -> None:
    """Send request 1 through `holding`, then its cancel once a POST of it is held (on its way, not at
    the server yet); release it and wait until the server got the cancel."""
    async with (
        serve_asgi(server.app) as url,
        httpx.AsyncClient(transport=holding) as http,
        StreamableHTTPTransport(url, http_client=http) as transport,
    ):
        with anyio.fail_after(10):
            await transport.send(_request(1))
            await holding.holding.wait()
            async with anyio.create_task_group() as tg:
                tg.start_soon(transport.send, _cancel(1))  # returns once the request went, then its cancel
                await all_blocked()
                holding.release.set()
                await server.cancel_seen.wait()


async def test_a_cancel_waits_for_its_request_to_be_posted() -> None:
    server = Recorder()
    await cancel_while_held(server, Holding())
    assert server.order == [(CALL, 1), (CANCELLED, {"requestId": 1})]


async def test_a_cancel_waits_for_a_request_sent_again_after_a_503() -> None:
    server = Recorder()
    server.busy = 1
    await cancel_while_held(server, Holding(pass_first=1))  # the first POST gets its 503; the second is held
    assert server.order == [(CALL, 1), (CALL, 1), (CANCELLED, {"requestId": 1})]


class ReadsTheBody(httpx.Auth):
    """An auth that reads each request's body before it is sent (as one that may send it again does)."""

    requires_request_body = True

    async def async_auth_flow(self, request: httpx.Request) -> AsyncIterator[httpx.Request]:
        request.headers["authorization"] = "Bearer t"
        yield request


@pytest.mark.parametrize("client", ["lean", "httpx", "httpx-auth", "asgi"])
async def test_a_cancel_reaches_a_request_whose_answer_head_is_held(client: str) -> None:
    """The cancel goes once the request is written, not once its answer's head came: a server that sends
    its head only with the answer (JSON) still gets the cancel while the request runs. Over the lean
    pool, httpx to a socket (also with an auth that reads the body before it is sent), and httpx's
    in-process `ASGITransport` (which returns no head before the whole answer)."""
    server = Recorder()
    server.answer_after = server.cancel_seen
    async with contextlib.AsyncExitStack() as stack:
        http = None
        if client == "asgi":
            url = "http://in-process/mcp"
            asgi = httpx.ASGITransport(app=server.app)
            http = await stack.enter_async_context(httpx.AsyncClient(transport=asgi))
        else:
            url = await stack.enter_async_context(serve_asgi(server.app))
        options = HttpClientOptions(lean=client == "lean", get_stream=False)
        auth = ReadsTheBody() if client == "httpx-auth" else None
        transport = StreamableHTTPTransport(url, options=options, http_client=http, auth=auth)
        async with transport:
            with anyio.fail_after(10):
                await transport.send(_request(1))
                await server.request_seen.wait()  # the server has the request (and holds its answer)
                await transport.send(_cancel(1))
                await server.cancel_seen.wait()
    assert server.order == [(CALL, 1), (CANCELLED, {"requestId": 1})]


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "httpx"])
async def test_a_request_cancelled_before_it_was_posted_is_never_posted(lean: bool) -> None:
    """Cancelled before its task began posting it, the request is dropped, and its cancel with it (a cancel
    must reference a request the server was sent)."""
    server = Recorder()
    async with serve_asgi(server.app) as url:
        options = HttpClientOptions(lean=lean, get_stream=False)
        async with StreamableHTTPTransport(url, options=options) as transport:
            with anyio.fail_after(10):
                await transport.send(_request(1) + _cancel(1))
                await transport.send(_request(2))
                answer = await transport.receive()
    assert json.loads(answer)["id"] == 2
    assert server.order == [(CALL, 2)]
