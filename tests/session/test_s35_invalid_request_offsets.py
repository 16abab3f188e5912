"""A frame refused as an invalid request (``-32600``: a float id, a method that is not a string, both a
result and an error, no ``jsonrpc``) says where it starts in its stream (``data.offset``), as a parse
error's does: on stdio, for a batch element (where the element starts), and in an HTTP body (``0``, the
body is the stream) or an HTTP batch element."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.session._support import Handlers, raw_session
from tests.streamable_http._server_support import asgi_client, initialize, session_headers

from mcpframe import core, jsonrpc

pytestmark = pytest.mark.anyio

BAD = [
    b'{"jsonrpc":"2.0","id":1.5,"method":"echo"}',
    b'{"jsonrpc":"2.0","id":2,"method":7}',
    b'{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"x"}}',
    b'{"id":4,"method":"echo"}',
]


def _errors(messages: list[Any]) -> list[Any]:
    out = []
    for message in messages:
        out.extend(item.error for item in (message if isinstance(message, list) else [message]) if item.error)
    return out


async def test_each_invalid_request_on_stdio_says_where_its_frame_starts() -> None:
    first = core.encode_request(1, "echo", {"n": 1})
    stream = first + b"\n".join(BAD) + b"\r\n"
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (_, peer):
            await peer.send(stream + core.encode_request("last", "echo", {"n": 1}))
            answer, before = await peer.until("last")
    assert answer.result == {"n": 1}
    errors = _errors(before)
    answered = [frame for frame in BAD if b'"result"' not in frame]  # a bad response gets no answer
    assert [e["code"] for e in errors] == [jsonrpc.INVALID_REQUEST] * len(answered)
    assert [e["data"] for e in errors] == [{"offset": stream.index(frame)} for frame in answered]


async def test_an_invalid_batch_element_on_stdio_says_where_it_starts() -> None:
    batch = b'[{"jsonrpc":"2.0","id":5,"method":"echo"},  ' + BAD[1] + b"]\n"
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (session, peer):
            session.batches = True
            await peer.send(b"\n\n" + batch + core.encode_request("last", "echo", {"n": 1}))
            _, before = await peer.until("last")
    errors = _errors(before)
    assert [(e["code"], e["data"]) for e in errors] == [
        (jsonrpc.INVALID_REQUEST, {"offset": 2 + batch.index(BAD[1])})
    ]


@pytest.mark.parametrize("body", BAD)
async def test_an_invalid_request_http_body_says_it_starts_at_0(body: bytes) -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client))
        refused = await client.post("/mcp", content=body, headers=headers)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert (error["code"], error["data"]) == (jsonrpc.INVALID_REQUEST, {"offset": 0})


async def test_an_invalid_element_of_an_http_batch_says_where_it_starts() -> None:
    body = b'[{"jsonrpc":"2.0","id":6,"method":"ping"}, ' + BAD[0] + b"]"
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client, "2025-03-26"), "2025-03-26")
        answered = await client.post("/mcp", content=body, headers=headers)
    errors = [m["error"] for m in answered.json() if "error" in m]
    assert [(e["code"], e["data"]) for e in errors] == [
        (jsonrpc.INVALID_REQUEST, {"offset": body.index(BAD[0])})
    ]
