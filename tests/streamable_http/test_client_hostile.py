"""The HTTP client facing a hostile or busy server: an unreadable answer fails only its own call, and a
503 with `Retry-After` is waited out before the error reaches the caller.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import pytest
from tests.streamable_http._client_support import Reply, Scripted, Seen, json_reply, result, serve_asgi

from mcpframe import jsonrpc
from mcpframe.http import connect
from mcpframe.http.options import HttpClientOptions
from mcpframe.session import JSONRPCError

from .test_client_wire_behaviour import legacy

pytestmark = pytest.mark.anyio

TOO_LONG = "integer literal longer than 4300 digits"


def big_result(rid: object, digits: int) -> bytes:
    """A result holding an integer literal of `digits` digits (json.dumps refuses to write one)."""
    return f'{{"jsonrpc": "2.0", "id": {json.dumps(rid)}, "result": {{"n": {"7" * digits}}}}}'.encode()


async def sse_body(data: bytes) -> AsyncIterator[bytes]:
    yield b"id: e-1\ndata: " + data + b"\n\n"


@pytest.mark.parametrize("digits", [4301, 100_000])
@pytest.mark.parametrize("shape", ["json", "sse"])
async def test_an_answer_with_an_over_long_integer_fails_that_call_and_the_session_goes_on(
    shape: str, digits: int
) -> None:
    async def handler(seen: Seen) -> Reply:
        reply = await legacy(seen)
        if reply is not None:
            return reply
        if seen.body["params"]["name"] != "big":
            return json_reply(result(seen.body["id"], {"content": [{"type": "text", "text": "fine"}]}))
        data = big_result(seen.body["id"], digits)
        if shape == "json":
            return Reply(200, {"content-type": "application/json"}, data)
        return Reply(200, {"content-type": "text/event-stream"}, sse_body(data))

    async with serve_asgi(Scripted(handler)) as url, connect(url, mode="legacy") as client:
        with anyio.fail_after(10):
            with pytest.raises(JSONRPCError) as caught:
                await client.call_tool("big", {})
            assert caught.value.code == jsonrpc.INVALID_REQUEST
            assert "the server's answer is invalid" in caught.value.message
            assert TOO_LONG in caught.value.message
            after = await client.call_tool("small", {})
    assert after["content"][0]["text"] == "fine"


async def endless_sse() -> AsyncIterator[bytes]:
    yield b"id: e-1\ndata: "
    while True:  # a line that never ends: the client must stop reading, not buffer it
        yield b"7" * 1024
        await anyio.sleep(0)


@pytest.mark.parametrize("shape", ["json", "sse", "endless sse"])
async def test_an_answer_past_max_message_fails_that_call_and_the_session_goes_on(shape: str) -> None:
    async def handler(seen: Seen) -> Reply:
        reply = await legacy(seen)
        if reply is not None:
            return reply
        if seen.body["params"]["name"] != "big":
            return json_reply(result(seen.body["id"], {"content": [{"type": "text", "text": "fine"}]}))
        data = json.dumps(result(seen.body["id"], {"content": [{"type": "text", "text": "y" * 10_000}]}))
        data = data.encode()
        if shape == "json":
            return Reply(200, {"content-type": "application/json"}, data)
        body = sse_body(data) if shape == "sse" else endless_sse()
        return Reply(200, {"content-type": "text/event-stream"}, body)

    options = HttpClientOptions(max_message=8192)
    async with (
        serve_asgi(Scripted(handler)) as url,
        connect(url, mode="legacy", http_options=options) as client,
    ):
        with anyio.fail_after(10):
            with pytest.raises(JSONRPCError) as caught:
                await client.call_tool("big", {})
            assert caught.value.code == jsonrpc.INTERNAL_ERROR
            assert "exceeds 8192 bytes (HttpClientOptions.max_message); not read" in caught.value.message
            after = await client.call_tool("small", {})
    assert after["content"][0]["text"] == "fine"


BUSY = {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "Service Unavailable: busy"}}


@pytest.mark.parametrize("busy_times", [1, 3, 4])
async def test_a_503_with_retry_after_is_waited_out_then_reaches_the_caller(busy_times: int) -> None:
    calls: list[Seen] = []

    async def handler(seen: Seen) -> Reply:
        reply = await legacy(seen)
        if reply is not None:
            return reply
        calls.append(seen)
        if len(calls) <= busy_times:
            return json_reply(BUSY, 503, **{"retry-after": "0"})
        return json_reply(result(seen.body["id"], {"content": [{"type": "text", "text": "in"}]}))

    async with serve_asgi(Scripted(handler)) as url, connect(url, mode="legacy") as client:
        with anyio.fail_after(10):
            if busy_times <= 3:  # the transport's max_reconnects (3): sent again up to three times
                answered = await client.call_tool("t", {})
                assert answered["content"][0]["text"] == "in"
            else:
                with pytest.raises(JSONRPCError) as caught:
                    await client.call_tool("t", {})
                assert caught.value.code == jsonrpc.INTERNAL_ERROR
                assert "Service Unavailable: busy" in caught.value.message
    assert len(calls) == min(busy_times + 1, 4)
    assert len({json.dumps(seen.body) for seen in calls}) == 1  # the same request each time


async def test_a_503_without_retry_after_or_asking_too_long_is_not_retried() -> None:
    calls: list[Seen] = []

    async def handler(seen: Seen) -> Reply:
        reply = await legacy(seen)
        if reply is not None:
            return reply
        calls.append(seen)
        headers = {} if len(calls) == 1 else {"retry-after": "3600"}
        return json_reply(BUSY, 503, **headers)

    async with serve_asgi(Scripted(handler)) as url, connect(url, mode="legacy") as client:
        for _ in range(2):
            with anyio.fail_after(10), pytest.raises(JSONRPCError):
                await client.call_tool("t", {})
    assert len(calls) == 2


async def test_a_rejected_server_request_sharing_our_id_does_not_fail_our_call() -> None:
    """On the SSE stream of our POST, an invalid *request* of the server's that happens to carry our
    request's id is dropped (and logged); the real answer after it still answers our call."""

    async def handler(seen: Seen) -> Reply:
        reply = await legacy(seen)
        if reply is not None:
            return reply
        rid = json.dumps(seen.body["id"])
        bogus = f'{{"jsonrpc": "2.0", "id": {rid}, "method": "sampling/createMessage", "params": 5}}'.encode()
        answer = json.dumps(result(seen.body["id"], {"content": [{"type": "text", "text": "real"}]})).encode()

        async def events() -> AsyncIterator[bytes]:
            yield b"id: e-1\ndata: " + bogus + b"\n\n"
            yield b"id: e-2\ndata: " + answer + b"\n\n"

        return Reply(200, {"content-type": "text/event-stream"}, events())

    async with serve_asgi(Scripted(handler)) as url, connect(url, mode="legacy") as client:
        with anyio.fail_after(10):
            answered = await client.call_tool("t", {})
    assert answered["content"][0]["text"] == "real"
