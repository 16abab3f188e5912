"""A POST whose `Accept` names `text/event-stream` alone (no `application/json`) is answered with an SSE
stream, whatever the response mode: MCP has the client accept both, and the server answer with either;
a client that accepts only SSE cannot read a JSON answer, and SSE is one the server can give. `Accept:
application/json` alone still gets JSON, and one naming neither is still a 406."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tests.streamable_http._server_support import (
    asgi_client,
    call,
    init_body,
    make_server,
    messages,
    served,
    session_headers,
)

from mcpframe.http.server import HttpOptions

pytestmark = pytest.mark.anyio

SSE_ONLY = {"content-type": "application/json", "accept": "text/event-stream"}
JSON_ONLY = {"content-type": "application/json", "accept": "application/json"}
MODES = ["resumable", "auto", "sse"]


@contextlib.asynccontextmanager
async def _client(host: str, mode: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A client of the ASGI app in-process, or of the lean HTTP/1.1 server; yields (client, endpoint)."""
    if host == "asgi":
        async with asgi_client(response_mode=mode) as (client, _):
            yield client, "/mcp"
        return
    options = HttpOptions(response_mode=mode)  # type: ignore[arg-type]
    async with (
        served(make_server(), options=options, http_server="mcpframe") as url,
        httpx.AsyncClient(timeout=20) as client,
    ):
        yield client, url


def _sse_answer(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    (answer,) = messages(response.text)
    return answer


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("host", ["asgi", "lean"])
async def test_a_client_that_accepts_only_sse_is_answered_with_sse(host: str, mode: str) -> None:
    async with _client(host, mode) as (client, url):
        init = await client.post(url, json=init_body(), headers=SSE_ONLY)
        assert _sse_answer(init)["result"]["protocolVersion"] == "2025-11-25"
        headers = session_headers(init.headers["mcp-session-id"])
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await client.post(url, json=note, headers=headers)).status_code == 202
        answer = _sse_answer(
            await client.post(url, json=call("echo", {"text": "hi"}), headers=headers | SSE_ONLY)
        )
        assert answer["result"]["content"] == [{"type": "text", "text": "hi"}]


@pytest.mark.parametrize("host", ["asgi", "lean"])
async def test_a_client_that_accepts_only_json_is_still_answered_with_json(host: str) -> None:
    async with _client(host, "sse") as (client, url):
        init = await client.post(url, json=init_body(), headers=JSON_ONLY)
        assert init.status_code == 200
        assert init.headers["content-type"].startswith("application/json")
        headers = session_headers(init.headers["mcp-session-id"])
        refused = await client.post(
            url, json=call("echo", {"text": "hi"}), headers=headers | {"accept": "text/html"}
        )
        assert refused.status_code == 406
