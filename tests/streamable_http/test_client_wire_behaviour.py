"""What the Streamable HTTP client puts on the wire and how it copes with each server behaviour.

A scripted server (`Scripted` on a live uvicorn) records every HTTP request and answers as each test says.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from tests.streamable_http._client_support import (
    Reply,
    Scripted,
    Seen,
    event,
    init_reply,
    init_result,
    json_reply,
    result,
    serve_asgi,
    sse_reply,
)

from mcpframe import jsonrpc
from mcpframe.http import connect
from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport
from mcpframe.session import JSONRPCError, Session

pytestmark = pytest.mark.anyio

ACCEPTED = Reply(202)
BAD_HEADER = {"code": -32600, "message": "bad header"}
NO_GET = Reply(405)


async def legacy(seen: Seen, session: str = "s-1", version: str = "2025-11-25") -> Reply | None:
    """The initialize handshake, a 202 for notifications and responses, 405 for GET, 200 for DELETE."""
    if seen.verb == "GET":
        return NO_GET
    if seen.verb == "DELETE":
        return Reply(200)
    if seen.method == "initialize":
        return json_reply(result(seen.body["id"], init_result(version)), **{"mcp-session-id": session})
    if (seen.body is not None and "id" not in seen.body) or seen.method is None:
        return ACCEPTED
    return None


async def test_headers_json_answers_get_and_delete() -> None:
    async def handler(seen: Seen) -> Reply:
        reply = await legacy(seen)
        return reply or json_reply(result(seen.body["id"], {"tools": [], "content": []}))

    app = Scripted(handler)
    auth = {"authorization": "Bearer t"}
    async with serve_asgi(app) as url, connect(url, mode="legacy", headers=auth) as client:
        assert client.protocol_version == "2025-11-25"
        await client.list_tools()
        await client.call_tool("add", {"a": 1})
    init, listing, call = (
        app.by_method("initialize")[0],
        *app.by_method("tools/list"),
        *app.by_method("tools/call"),
    )
    assert "mcp-session-id" not in init.headers
    assert "mcp-protocol-version" not in init.headers
    for seen in (init, listing, call):
        assert seen.headers["accept"] == "application/json, text/event-stream"
        assert seen.headers["content-type"] == "application/json"
        assert seen.headers["authorization"] == "Bearer t"
        assert seen.headers["mcp-method"] == seen.method
    for seen in (listing, call, *app.by_method("notifications/initialized")):
        assert seen.headers["mcp-session-id"] == "s-1"
        assert seen.headers["mcp-protocol-version"] == "2025-11-25"
    assert call.headers["mcp-name"] == "add"
    assert "mcp-name" not in listing.headers
    (get,) = app.verbs("GET")  # the standalone stream: tried once after initialized, 405 is final
    assert get.at > app.by_method("notifications/initialized")[0].at
    assert get.headers["accept"] == "text/event-stream"
    assert get.headers["mcp-session-id"] == "s-1"
    (delete,) = app.verbs("DELETE")
    assert delete.headers["mcp-session-id"] == "s-1"


async def test_expired_session_is_reinitialized_and_the_message_resent() -> None:
    sessions = iter(["s-1", "s-2"])
    current: list[str] = []

    async def handler(seen: Seen) -> Reply:
        if seen.method == "initialize":
            current.append(next(sessions))
            return init_reply(seen, current[-1])
        if seen.verb == "POST" and seen.headers.get("mcp-session-id") != current[-1]:
            return Reply(404)
        if seen.method == "tools/list" and current[-1] == "s-1":
            current[-1] = "expired"  # the server forgets s-1 after this call
        reply = await legacy(seen, current[-1])
        return reply or json_reply(result(seen.body["id"], {"tools": [{"name": current[-1]}]}))

    app = Scripted(handler)
    async with serve_asgi(app) as url, connect(url, mode="legacy") as client:
        assert await client.list_tools() == [{"name": "expired"}]
        assert await client.list_tools() == [{"name": "s-2"}]  # 404, re-initialized, sent again
    first, again = app.by_method("initialize")
    assert "mcp-session-id" not in again.headers
    assert "mcp-protocol-version" not in again.headers
    assert again.body["params"] == first.body["params"]
    assert again.body["id"] != first.body["id"]
    listings = app.by_method("tools/list")
    assert [s.headers["mcp-session-id"] for s in listings] == ["s-1", "s-1", "s-2"]
    assert [s.headers["mcp-session-id"] for s in app.by_method("notifications/initialized")] == ["s-1", "s-2"]


async def _closed_after_priming(event_id: str, retry: int) -> AsyncIterator[bytes]:
    yield event(id=event_id, retry=retry)


async def _resumed(rid: Any, value: Any) -> AsyncIterator[bytes]:
    yield event(id="get-0")
    yield event(result(rid, value), id="get-1")


async def test_closed_stream_is_resumed_with_last_event_id_after_retry() -> None:
    pending: list[Any] = []

    async def handler(seen: Seen) -> Reply:
        if seen.method == "tools/call":
            pending.append(seen.body["id"])
            return sse_reply(_closed_after_priming("call-7", 300))
        if seen.verb == "GET" and "last-event-id" in seen.headers:
            return sse_reply(_resumed(pending[0], {"content": [], "resumed": True}))
        reply = await legacy(seen)
        return reply or json_reply(result(seen.body["id"], {}))

    app = Scripted(handler)
    async with serve_asgi(app) as url, connect(url, mode="legacy") as client:
        with anyio.fail_after(10):
            answer = await client.call_tool("slow", {})
    assert answer["resumed"] is True
    (resume,) = [s for s in app.verbs("GET") if "last-event-id" in s.headers]
    assert resume.headers["last-event-id"] == "call-7"
    assert resume.headers["mcp-session-id"] == "s-1"
    assert resume.at - app.by_method("tools/call")[0].at >= 0.29  # waited the server's retry (300 ms)


@pytest.mark.parametrize(
    ("reply", "code", "text"),
    [
        (
            Reply(500, {"content-type": "text/plain"}, b"boom"),
            jsonrpc.INTERNAL_ERROR,
            "HTTP 500 from the server: boom",
        ),
        (
            json_reply(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "bad header"}}, 400
            ),
            -32600,
            "bad header",
        ),
        (ACCEPTED, jsonrpc.INTERNAL_ERROR, "HTTP 202"),
        (json_reply({"jsonrpc": "2.0", "result": {}}), jsonrpc.CONNECTION_CLOSED, "did not include"),
        (sse_reply(_closed_after_priming("", 10)), jsonrpc.CONNECTION_CLOSED, "did not include"),
        (Reply(200, {"content-type": "text/html"}, b"<p>"), jsonrpc.INTERNAL_ERROR, "text/html"),
    ],
)
async def test_unanswered_requests_fail_instead_of_hanging(reply: Reply, code: int, text: str) -> None:
    async def handler(seen: Seen) -> Reply:
        return reply if seen.method == "tools/call" else (await legacy(seen) or json_reply({}))

    async with serve_asgi(Scripted(handler)) as url, connect(url, mode="legacy") as client:
        with anyio.fail_after(10), pytest.raises(JSONRPCError) as caught:
            await client.call_tool("x", {})
    assert caught.value.code == code
    assert text in caught.value.message


async def test_connection_refused_fails_the_request() -> None:
    transport = StreamableHTTPTransport(
        "http://127.0.0.1:9/mcp", options=HttpClientOptions(connect_timeout=5)
    )
    async with transport, Session(transport) as session:
        with anyio.fail_after(10), pytest.raises(JSONRPCError) as caught:
            await session.request("ping")
    assert caught.value.code == jsonrpc.CONNECTION_CLOSED
    assert transport.closed


async def test_modern_era_headers_and_no_session() -> None:
    async def handler(seen: Seen) -> Reply:
        if seen.method == "server/discover":
            return json_reply(
                result(seen.body["id"], {"supportedVersions": ["2026-07-28"], "capabilities": {}})
            )
        if seen.verb != "POST":
            return Reply(405)
        return json_reply(result(seen.body["id"], {"content": [], "resultType": "complete"}))

    app = Scripted(handler)
    async with serve_asgi(app) as url, connect(url) as client:
        assert client.era == "modern"
        await client.call_tool("tööl_unicode", {})
        await client.read_resource("test://a b")
    discover, call, read = app.seen[0], app.by_method("tools/call")[0], app.by_method("resources/read")[0]
    for seen in (discover, call, read):
        assert seen.headers["mcp-protocol-version"] == "2026-07-28"
        assert "mcp-session-id" not in seen.headers
        assert seen.headers["mcp-method"] == seen.method
    assert call.headers["mcp-name"] == "=?base64?" + base64.b64encode("tööl_unicode".encode()).decode() + "?="
    assert read.headers["mcp-name"] == "test://a b"
    assert [s.verb for s in app.seen] == ["POST"] * 3  # no GET stream, no DELETE without a session


async def _asks_then_answers(rid: Any, answered: anyio.Event) -> AsyncIterator[bytes]:
    ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create", "params": {"message": "name?"}}
    yield event(ask, id="c-0")
    await answered.wait()
    yield event(result(rid, {"content": [{"type": "text", "text": "hi"}]}), id="c-1")


async def _notifies() -> AsyncIterator[bytes]:
    note = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": "on GET"},
    }
    yield event(note, id="g-0")
    await anyio.sleep_forever()


async def test_server_requests_on_the_post_stream_and_notifications_on_the_get_stream() -> None:
    answered = anyio.Event()
    responses: list[Seen] = []

    async def handler(seen: Seen) -> Reply:
        if seen.method == "tools/call":
            return sse_reply(_asks_then_answers(seen.body["id"], answered))
        if seen.verb == "GET":
            return sse_reply(_notifies())
        if seen.body is not None and "result" in seen.body:
            responses.append(seen)
            answered.set()
        return await legacy(seen) or json_reply({})

    logged: list[dict[str, Any]] = []
    got_log = anyio.Event()

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": params["message"]}}

    def on_log(params: dict[str, Any]) -> None:
        logged.append(params)
        got_log.set()

    app = Scripted(handler)
    handlers: dict[str, Any] = {"elicitation_handler": elicit, "logging_handler": on_log}
    async with serve_asgi(app) as url, connect(url, mode="legacy", **handlers) as client:
        with anyio.fail_after(10):
            answer = await client.call_tool("greet", {})
            await got_log.wait()
    assert answer["content"][0]["text"] == "hi"
    (response,) = responses
    assert response.body == {
        "jsonrpc": "2.0",
        "id": "srv-1",
        "result": {"action": "accept", "content": {"name": "name?"}},
    }
    assert response.headers["mcp-session-id"] == "s-1"
    assert "mcp-method" not in response.headers
    assert logged == [{"level": "info", "data": "on GET"}]
    assert json.loads(json.dumps(app.by_method("initialize")[0].body))["params"]["capabilities"][
        "elicitation"
    ]


async def _never_answers() -> AsyncIterator[bytes]:
    yield event(id="n-0", retry=10)
    await anyio.sleep_forever()


async def test_a_cancelled_request_stops_its_exchange_and_closes_the_stream() -> None:
    called = anyio.Event()

    async def handler(seen: Seen) -> Reply:
        if seen.method == "tools/call":
            called.set()
            return sse_reply(_never_answers())
        return await legacy(seen) or json_reply({})

    app = Scripted(handler)
    async with serve_asgi(app) as url, connect(url, mode="legacy", transport="streamable-http") as client:
        transport = client.session.transport
        assert isinstance(transport, StreamableHTTPTransport)
        # Given up on once the server holds it (a fixed short timeout could fire before the POST was written
        # on a loaded box, and a request cancelled unsent never goes out: then there is no exchange to stop).
        with anyio.CancelScope() as gave_up:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(client.call_tool, "hang", {})
                with anyio.fail_after(10):
                    await called.wait()
                gave_up.cancel()
        assert gave_up.cancelled_caught
        with anyio.fail_after(10):
            await app.disconnected.wait()  # the client closed the stream of the request it gave up on
            while transport.in_flight:  # and forgets it (right after closing)
                await anyio.sleep(0.01)
    (cancel,) = app.by_method("notifications/cancelled")
    assert cancel.body["params"]["requestId"] == app.by_method("tools/call")[0].body["id"]
    assert cancel.headers["mcp-session-id"] == "s-1"


async def _primes_then_closes() -> AsyncIterator[bytes]:
    yield event(id="g-0", retry=50)


async def test_standalone_stream_is_reopened_with_last_event_id() -> None:
    async def handler(seen: Seen) -> Reply:
        if seen.verb == "GET":
            first = len(app.verbs("GET")) == 1
            return sse_reply(_primes_then_closes() if first else _notifies())
        return await legacy(seen) or json_reply({})

    got = anyio.Event()
    app = Scripted(handler)
    options: dict[str, Any] = {"mode": "legacy", "logging_handler": lambda params: got.set()}
    async with serve_asgi(app) as url, connect(url, **options):
        with anyio.fail_after(10):
            await got.wait()
    first, second = app.verbs("GET")
    assert "last-event-id" not in first.headers
    assert second.headers["last-event-id"] == "g-0"
    assert second.at - first.at >= 0.045  # the server's retry: 50 ms


async def test_auto_mode_falls_back_when_the_server_refuses_discover() -> None:
    refused = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Server not initialized"}}

    async def handler(seen: Seen) -> Reply:
        if seen.method == "server/discover":
            return json_reply(refused, 400)
        reply = await legacy(seen)
        return reply or json_reply(result(seen.body["id"], {"tools": [{"name": "t"}]}))

    app = Scripted(handler)
    async with serve_asgi(app) as url, connect(url) as client:
        assert client.era == "legacy"
        assert await client.list_tools() == [{"name": "t"}]
    assert [s.method for s in app.seen[:3]] == ["server/discover", "initialize", "notifications/initialized"]


async def test_unreachable_server_fails_the_connect_quickly() -> None:
    with anyio.fail_after(20), pytest.raises(JSONRPCError) as caught:
        async with connect("http://127.0.0.1:9/mcp"):
            pass
    assert caught.value.code == jsonrpc.CONNECTION_CLOSED
    assert "HTTP request failed" in caught.value.message


async def _answers_later(pending: list[Any], ready: anyio.Event) -> AsyncIterator[bytes]:
    yield event(id="g-0")
    await ready.wait()
    yield event(result(pending[0], {"content": [], "via": "GET"}), id="g-1")
    await anyio.sleep_forever()


async def test_answer_on_the_standalone_stream_ends_the_posts_exchange() -> None:
    pending: list[Any] = []
    called = anyio.Event()

    async def handler(seen: Seen) -> Reply:
        if seen.method == "tools/call":
            pending.append(seen.body["id"])
            called.set()
            return sse_reply(_never_answers())
        if seen.verb == "GET":
            return sse_reply(_answers_later(pending, called))
        return await legacy(seen) or json_reply({})

    app = Scripted(handler)
    async with serve_asgi(app) as url, connect(url, mode="legacy", transport="streamable-http") as client:
        transport = client.session.transport
        assert isinstance(transport, StreamableHTTPTransport)
        with anyio.fail_after(10):
            answer = await client.call_tool("t", {})
            await app.disconnected.wait()  # the POST stream, which would never have answered, was closed
            while transport.in_flight:
                await anyio.sleep(0.01)
    assert answer["via"] == "GET"
    assert not app.by_method("notifications/cancelled")  # answered, not cancelled
