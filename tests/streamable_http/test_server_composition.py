"""The HTTP server as a composition: typed, frozen options; a `PostHandler` that works without the server."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from mcpframe.http.admission import Admission
from mcpframe.http.asgi import HttpRequest
from mcpframe.http.handling import PostHandler
from mcpframe.http.options import HttpClientOptions, HttpOptions
from mcpframe.http.responses import Reply, StreamReplies
from mcpframe.http.server import StreamableHTTPServer
from mcpframe.http.sessions import SessionManager
from mcpframe.session import SessionOptions

from ._server_support import asgi_client, call, initialize, make_server, modern_meta, session_headers

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_options_are_frozen_and_every_knob_is_a_typed_field() -> None:
    options = HttpOptions(max_in_flight=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_in_flight = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        HttpOptions(max_inflight=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):  # no untyped overrides beside the options
        StreamableHTTPServer(make_server(), options, max_body=1)  # type: ignore[call-arg]
    assert dataclasses.replace(options, max_queued=0).max_in_flight == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_body": 0}, "HttpOptions.max_body must be at least 1, got 0"),
        ({"retry_ms": -1}, "HttpOptions.retry_ms must be at least 0, got -1"),
        ({"keepalive": 0}, "HttpOptions.keepalive must be more than 0, got 0"),
        ({"idle_timeout": 0}, "HttpOptions.idle_timeout must be more than 0 (or None), got 0"),
        ({"response_mode": "json"}, "response_mode must be 'resumable', 'auto' or 'sse', got 'json'"),
        ({"path": "mcp"}, "path must start with '/', got 'mcp'"),
    ],
)
def test_options_out_of_range_are_refused_where_they_are_written(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        HttpOptions(**options)
    assert HttpOptions(idle_timeout=None, stream_after=0).idle_timeout is None


def test_client_options_out_of_range_are_refused_where_they_are_written() -> None:
    with pytest.raises(ValueError, match=re.escape("HttpClientOptions.connect_timeout must be more than 0")):
        HttpClientOptions(connect_timeout=0)
    with pytest.raises(ValueError, match=re.escape("HttpClientOptions.max_buffer must be at least 1, got 0")):
        HttpClientOptions(max_buffer=0)


@pytest.mark.parametrize(
    ("session_options", "max_frame", "max_in_flight"),
    [(None, 5000, SessionOptions().max_in_flight), (SessionOptions(max_in_flight=3), 5000, 3)],
)
async def test_lane_sessions_get_the_typed_session_options(
    session_options: SessionOptions | None, max_frame: int | None, max_in_flight: int
) -> None:
    async with asgi_client(response_mode="auto", max_body=5000, session_options=session_options) as (
        client,
        http,
    ):
        headers = session_headers(await initialize(client))
        answered = await client.post("/mcp", json=call("echo", {"text": "x"}), headers=headers)
        assert answered.json()["result"]["content"][0]["text"] == "x"
        session = next(iter(http.sessions.sessions.values()))
        assert session.lanes is not None
        lane = session.lanes.acquire()
        assert lane.session.options.max_in_flight == max_in_flight
        # the lanes read at most what a body may hold, whether the options were given or not
        assert lane.session.options.max_frame == 5000
        lane.done()


async def test_a_frame_longer_than_the_lanes_max_frame_is_refused_on_the_post_not_lost() -> None:
    # A lane refuses a frame past its max_frame; the POST is decoded with the same limit, so such a
    # request gets its error answer instead of waiting for a response that never comes.
    options = SessionOptions(max_frame=300)
    async with asgi_client(response_mode="auto", max_body=5000, session_options=options) as (client, _):
        headers = session_headers(await initialize(client))
        with anyio.fail_after(10):
            refused = await client.post("/mcp", json=call("echo", {"text": "x" * 400}), headers=headers)
            answered = await client.post("/mcp", json=call("echo", {"text": "y"}), headers=headers)
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["code"] == -32600
        assert "300" in error["message"]
        assert answered.json()["result"]["content"][0]["text"] == "y"  # the session goes on


async def _post(handler: PostHandler, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
    """Drive `handler` with one ASGI request and collect the reply it writes."""
    raw = json.dumps(body).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    sent: list[MutableMapping[str, Any]] = []
    requests = [{"type": "http.request", "body": raw, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop(0)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    answer = await handler.handle(HttpRequest(scope, receive), None)
    assert isinstance(answer, Reply)
    await answer(receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def test_a_post_handler_answers_with_only_what_it_is_given() -> None:
    server = make_server()
    connections: list[Any] = []

    def connect() -> Any:
        connections.append(server.connection())
        return connections[-1]

    options = HttpOptions(response_mode="auto")
    sessions = SessionManager(connect, store=None, idle_timeout=None)
    handler = PostHandler(
        options,
        sessions=sessions,
        admission=Admission(1, 0),
        connect=connect,
        replies=StreamReplies(retry_ms=options.retry_ms, keepalive=options.keepalive),
    )
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }
    async with anyio.create_task_group() as tg:
        await tg.start(sessions.run)
        with anyio.fail_after(10):
            status, body = await _post(handler, call("echo", {"text": "alone"}, **modern_meta()), headers)
        assert status == 200
        assert json.loads(body)["result"]["content"][0]["text"] == "alone"
        assert len(connections) == 1  # a stateless request: one connection of its own, from `connect`
        assert handler.admission.running == 0  # its room was given back
        tg.cancel_scope.cancel()
