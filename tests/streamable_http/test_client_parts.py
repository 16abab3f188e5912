"""The Streamable HTTP client's parts on their own: answer reader, inbox, session state, options."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import anyio
import httpx
import pytest

from mcpframe import core
from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport
from mcpframe.http.client_answers import AnswerReader, Inbox, Undeliverable
from mcpframe.http.client_wire import SessionState

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:9/mcp"
HTTP = httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(500)))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _message(obj: dict[str, Any]) -> Any:
    item = core.decode(json.dumps(obj).encode())[0]
    assert not isinstance(item, core.FrameError)
    return item


def _reader(inbox: Inbox, state: SessionState, elsewhere: list[int | str]) -> AnswerReader:
    return AnswerReader(
        HTTP,  # never used: the answers below are complete responses
        URL,
        state=state,
        inbox=inbox,
        options=HttpClientOptions(),
        answered_elsewhere=elsewhere.append,
    )


async def test_the_reader_forwards_an_answer_and_tells_who_else_was_answered() -> None:
    inbox, state, elsewhere = Inbox(8), SessionState({"authorization": "Bearer t"}), []
    init = _message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    state.init_request = init
    body = [
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
        {"jsonrpc": "2.0", "id": 9, "result": {}},  # another request's answer, on this POST's body
        {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25"}},
    ]
    resp = httpx.Response(
        200,
        content=json.dumps(body).encode(),
        headers={"content-type": "application/json", "mcp-session-id": "s-1"},
    )
    with anyio.fail_after(5):
        assert await _reader(inbox, state, elsewhere).answer(init, resp, intercept=False) is None
        forwarded = await inbox.receive()
    assert [json.loads(line).get("id") for line in forwarded.splitlines()] == [None, 9, 1]
    assert elsewhere == [9]
    inbox.close()
    assert await inbox.receive() == b""
    assert (state.session_id, state.protocol_version) == ("s-1", "2025-11-25")
    assert state.headers() == {
        "authorization": "Bearer t",
        "mcp-session-id": "s-1",
        "mcp-protocol-version": "2025-11-25",
    }


async def test_a_priming_event_is_not_taken_for_an_invalid_message(caplog: pytest.LogCaptureFixture) -> None:
    inbox, state = Inbox(8), SessionState(None)
    request = _message({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
    answer = json.dumps({"jsonrpc": "2.0", "id": 4, "result": {"tools": []}})
    stream = f"id: 0\nretry: 10\ndata:\n\nid: 1\nevent: message\ndata: {answer}\n\n"
    resp = httpx.Response(200, content=stream.encode(), headers={"content-type": "text/event-stream"})
    with anyio.fail_after(5):
        assert await _reader(inbox, state, []).answer(request, resp, intercept=False) is None
        forwarded = await inbox.receive()
    assert json.loads(forwarded) == json.loads(answer)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_missing_answer_becomes_an_error_and_a_closed_inbox_refuses_delivery() -> None:
    inbox, state = Inbox(8), SessionState(None)
    request = _message({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    resp = httpx.Response(202)
    with anyio.fail_after(5):
        failure = await _reader(inbox, state, []).answer(request, resp, intercept=False)
    assert failure is not None
    assert failure.id == 3
    assert failure.error is not None
    assert "HTTP 202" in failure.error["message"]
    inbox.close()
    with pytest.raises(Undeliverable):
        await inbox.push([failure])
    assert await inbox.receive() == b""


async def test_transport_options_are_typed_and_frozen() -> None:
    options = HttpClientOptions(get_stream=False, max_reconnects=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.connect_timeout = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):  # the knobs are the options' fields, not keywords of the transport
        StreamableHTTPTransport(URL, timeout=5)  # type: ignore[call-arg]
    transport = StreamableHTTPTransport(URL, headers={"x-a": "1"}, http_client=HTTP, options=options)
    assert transport.options is options
    assert transport.headers == {"x-a": "1"}
    assert transport.session_id is None
    assert transport.protocol_version is None
    await transport.aclose()
    assert transport.closed
    assert await transport.receive() == b""
