"""A request whose SSE stream ends (or dies with its server) before the answer gets an error that says so.

It said "the server's answer did not include it" for every case; for a stream that ended and could not be
resumed (the usual cause: the server went away mid-call) it now names the stream. A JSON body without the
answer keeps its message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
import pytest
from tests.streamable_http._client_support import (
    Reply,
    Scripted,
    Seen,
    event,
    json_reply,
    serve_asgi,
    sse_reply,
)
from tests.streamable_http.test_client_wire_behaviour import legacy

from mcpframe import jsonrpc
from mcpframe.http import connect
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio

STREAM_ENDED = (
    "the server's event stream ended and did not include the answer (closed, and not resumed to it)"
)


async def _primed(event_id: str) -> AsyncIterator[bytes]:
    yield event(id=event_id, retry=10)


@pytest.mark.parametrize(
    ("reply", "resumable", "message"),
    [
        (lambda: sse_reply(_primed("")), False, STREAM_ENDED),  # nothing to resume from
        (lambda: sse_reply(_primed("call-1")), True, STREAM_ENDED),  # resuming is refused (404)
        (
            lambda: json_reply({"jsonrpc": "2.0", "result": {}}),
            False,
            "the server's answer did not include it",
        ),
    ],
    ids=["stream-without-event-id", "stream-not-resumable", "json-without-answer"],
)
async def test_an_answer_that_never_came_names_where_it_was_lost(
    reply: Callable[[], Reply], resumable: bool, message: str
) -> None:
    async def handler(seen: Seen) -> Reply:
        if seen.method == "tools/call":
            return reply()
        if seen.verb == "GET" and "last-event-id" in seen.headers:
            return Reply(404)
        if seen.method == "ping":
            return json_reply({"jsonrpc": "2.0", "id": seen.body["id"], "result": {}})
        return await legacy(seen) or Reply(500)

    app = Scripted(handler)
    async with serve_asgi(app) as url, connect(url, mode="legacy") as client:
        with anyio.fail_after(30), pytest.raises(JSONRPCError) as caught:
            await client.call_tool("x", {})
        with anyio.fail_after(30):
            await client.ping()  # the connection goes on
    assert (caught.value.code, caught.value.message) == (jsonrpc.CONNECTION_CLOSED, message)
    tried = [seen for seen in app.verbs("GET") if "last-event-id" in seen.headers]
    assert len(tried) == (1 if resumable else 0)
