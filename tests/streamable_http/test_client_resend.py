"""The Streamable HTTP client sends a request's body again when httpx asks it to, and never after its cancel.

httpx sends a request twice when an `httpx.Auth` answers a 401 by signing the request again (DigestAuth, an
OAuth provider refreshing its token) or when a client follows a 307/308 redirect: the body must be iterable
twice. The transport itself sends a request again after a 503 (`Retry-After`) or a 404 for its session: not
once the caller cancelled it, or the server would run a request whose cancel it already ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import pytest
from tests.streamable_http._client_support import (
    Reply,
    Scripted,
    Seen,
    init_reply,
    init_request,
    json_reply,
    result,
    serve_asgi,
)

from mcpframe import core
from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport

pytestmark = pytest.mark.anyio

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


class SignsAgainAfter401(httpx.Auth):
    """Sends each request unsigned, then signed after a 401, without reading the body first (as
    `httpx.DigestAuth` and the MCP SDK's OAuth provider do)."""

    requires_request_body = False

    async def async_auth_flow(self, request: httpx.Request) -> AsyncIterator[httpx.Request]:
        response = yield request
        if response.status_code == 401:
            request.headers["authorization"] = "Bearer fresh"
            yield request


async def answer_ping(seen: Seen) -> Reply:
    return json_reply(result(seen.body["id"], {}))


async def test_an_auth_that_sends_the_request_again_after_a_401_gets_its_answer() -> None:
    async def handle(seen: Seen) -> Reply:
        if "authorization" not in seen.headers:
            return Reply(401)
        return await answer_ping(seen)

    app = Scripted(handle)
    async with serve_asgi(app) as url:
        options = HttpClientOptions(get_stream=False)
        async with StreamableHTTPTransport(url, options=options, auth=SignsAgainAfter401()) as transport:
            with anyio.fail_after(10):
                await transport.send(PING)
                answer = json.loads(await transport.receive())
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert [(s.headers.get("authorization"), s.body) for s in app.by_method("ping")] == [
        (None, json.loads(PING)),
        ("Bearer fresh", json.loads(PING)),
    ]


def redirecting(app: Scripted, src: str, dst: str) -> Callable[..., Any]:
    """`app`, but a request to path `src` is recorded (in `app.seen`) and answered 307 to `dst`."""
    moved = Scripted(lambda seen: _moved(dst))
    moved.seen = app.seen

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        await (moved if scope["type"] == "http" and scope["path"] == src else app)(scope, receive, send)

    return asgi


async def _moved(dst: str) -> Reply:
    return Reply(307, {"location": dst})


async def test_a_client_following_a_307_gets_the_answer_from_the_new_place() -> None:
    app = Scripted(answer_ping)
    async with serve_asgi(redirecting(app, "/mcp", "/mcp2")) as url:
        options = HttpClientOptions(get_stream=False)
        async with (
            httpx.AsyncClient(follow_redirects=True) as http,
            StreamableHTTPTransport(url, options=options, http_client=http) as transport,
        ):
            with anyio.fail_after(10):
                await transport.send(PING)
                answer = json.loads(await transport.receive())
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert [s.body for s in app.by_method("ping")] == [json.loads(PING), json.loads(PING)]


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "httpx"])
@pytest.mark.parametrize("refusal", ["busy", "expired"])
async def test_a_request_cancelled_before_its_refusal_is_not_sent_again(lean: bool, refusal: str) -> None:
    """The server refuses the request (503 `Retry-After: 0`, or 404 for an expired session) only once it
    got the request's cancel, and answers the cancel only once the transport ended the request's exchange:
    the request is not posted again (it would run, its cancel already ignored)."""
    transport: StreamableHTTPTransport | None = None
    cancel_seen = anyio.Event()
    calls = 0

    async def handle(seen: Seen) -> Reply:
        nonlocal calls
        if seen.method == "initialize":
            return init_reply(seen, f"s{calls}")
        if seen.method == "notifications/cancelled":
            assert transport is not None
            cancel_seen.set()
            while transport.in_flight:  # no timing: the outcome does not depend on how long this takes
                await anyio.sleep(0.001)
            return Reply(202)
        if seen.method != "tools/call":
            return Reply(202)
        calls += 1
        if calls > 1:
            return json_reply(result(seen.body["id"], {"content": []}))
        await cancel_seen.wait()
        return Reply(503, {"retry-after": "0"}) if refusal == "busy" else Reply(404)

    app = Scripted(handle)
    async with serve_asgi(app) as url:
        options = HttpClientOptions(lean=lean, get_stream=False)
        async with StreamableHTTPTransport(url, options=options) as transport:
            with anyio.fail_after(10):
                await transport.send(init_request(0))
                await transport.receive()
                await transport.send(core.encode_request(1, "tools/call", {"name": "slow"}) + b"\n")
                while not app.by_method("tools/call"):
                    await anyio.sleep(0.001)
                cancel = core.encode_notification("notifications/cancelled", {"requestId": 1})
                await transport.send(cancel + b"\n")
                while not app.by_method("notifications/cancelled") or transport.in_flight:
                    await anyio.sleep(0.001)
    assert calls == 1
    sent = [s.method for s in app.seen if s.method in ("tools/call", "notifications/cancelled")]
    assert sent == ["tools/call", "notifications/cancelled"]


async def test_the_lean_pool_does_not_send_a_cancelled_request_again_after_a_stale_connection() -> None:
    """The lean pool sends a request again on a new connection when the idle one it was written to turns
    out dropped by the server (nothing came back): not once the request was cancelled, its cancel being
    posted already (the request sent again would overtake it). The server drops the idle connection only
    once it got the cancel, and answers the cancel only once the request's exchange ended."""
    transport: StreamableHTTPTransport | None = None
    methods: list[str] = []
    cancel_seen = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                )
                body = json.loads(await reader.readexactly(length))
                methods.append(body["method"])
                if body["method"] == "tools/call":  # on the idle connection (the ping's): dropped unanswered
                    await cancel_seen.wait()
                    writer.transport.abort()
                    return
                if "id" in body:
                    writer.write(_http_json(result(body["id"], {})))
                else:
                    cancel_seen.set()
                    assert transport is not None
                    while transport.in_flight:  # no timing: the outcome does not depend on how long
                        await asyncio.sleep(0.001)
                    writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        options = HttpClientOptions(lean=True, get_stream=False)
        async with StreamableHTTPTransport(f"http://127.0.0.1:{port}/mcp", options=options) as transport:
            assert transport.lean_pool is not None
            with anyio.fail_after(10):
                await transport.send(PING)
                await transport.receive()
                await transport.send(core.encode_request(2, "tools/call", {"name": "slow"}) + b"\n")
                while "tools/call" not in methods:
                    await anyio.sleep(0.001)
                await transport.send(
                    core.encode_notification("notifications/cancelled", {"requestId": 2}) + b"\n"
                )
                while transport.in_flight:
                    await anyio.sleep(0.001)
    finally:
        server.close()
    assert methods == ["ping", "tools/call", "notifications/cancelled"]


def _http_json(message: Any) -> bytes:
    body = json.dumps(message).encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
    return head + body
