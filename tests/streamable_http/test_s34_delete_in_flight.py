"""A DELETE of the session while a `tools/call` POST is in flight, its answer still awaited as JSON: the
request gets a JSON-RPC error (-32000, "the HTTP session ended before request 7 was answered...")
instead of a bare 202 (a JSON-only client) or an empty SSE stream (one that takes both, held for JSON
in `auto` mode), on the lean server and on uvicorn; a batch gets one error per request. An SSE
response already open still ends with no answer (its requests were cancelled, as the SDKs' hosts do:
tests/streamable_http/test_server_live.py), and a request the client cancelled itself still gets none."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from tests.streamable_http._server_support import call, make_server, open_session, served

from mcpframe import jsonrpc
from mcpframe.http.options import HttpOptions
from mcpframe.http.responses import session_ended_text

pytestmark = pytest.mark.anyio

JSON_ONLY = {"content-type": "application/json", "accept": "application/json"}
BOTH = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
HOSTS = ["mcpframe", "uvicorn"]


def _ended(rid: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "error": {"code": jsonrpc.CONNECTION_CLOSED, "message": session_ended_text(rid)},
    }


async def _deleted_while_waiting(
    host: str, accept: dict[str, str], body: Any, version: str = "2025-11-25"
) -> httpx.Response:
    """POST `body` (calls of `wait`) in a session, DELETE it once the tool runs; the POST's answer."""
    server = make_server()
    options = HttpOptions(response_mode="auto", stream_after=60.0)
    async with (
        served(server, options=options, http_server=host) as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        headers = await open_session(client, url, version)
        found: list[httpx.Response] = []

        async def post() -> None:
            found.append(await client.post(url, json=body, headers={**headers, **accept}))
            server.started.set()  # type: ignore[attr-defined]  # (answered before it ran: the test fails)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(post)
                await server.started.wait()  # type: ignore[attr-defined]
                if not found:
                    assert (await client.delete(url, headers=headers)).status_code == 200
        return found[0]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("accept", [JSON_ONLY, BOTH], ids=["json-only", "both"])
async def test_a_request_in_flight_when_its_session_is_deleted_gets_an_error(
    host: str, accept: dict[str, str]
) -> None:
    response = await _deleted_while_waiting(host, accept, call("wait", rid=7))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == _ended(7)


@pytest.mark.parametrize("host", HOSTS)
async def test_each_request_of_a_batch_in_flight_when_its_session_is_deleted_gets_an_error(host: str) -> None:
    response = await _deleted_while_waiting(
        host, JSON_ONLY, [call("wait", rid=3), call("wait", rid=4)], "2025-03-26"
    )
    assert response.status_code == 200
    assert sorted(response.json(), key=lambda m: m["id"]) == [_ended(3), _ended(4)]


@pytest.mark.parametrize("host", HOSTS)
async def test_a_request_the_client_cancelled_still_gets_no_answer(host: str) -> None:
    server = make_server()
    async with (
        served(server, options=HttpOptions(response_mode="auto", stream_after=60.0), http_server=host) as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        headers = await open_session(client, url)
        found: list[httpx.Response] = []

        async def post() -> None:
            found.append(await client.post(url, json=call("wait", rid=8), headers={**headers, **JSON_ONLY}))

        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}}
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(post)
                await server.started.wait()  # type: ignore[attr-defined]
                assert (await client.post(url, json=cancel, headers=headers)).status_code == 202
        assert found[0].status_code == 202
        assert found[0].content == b""
