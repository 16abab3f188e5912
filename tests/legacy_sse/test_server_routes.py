"""The legacy HTTP+SSE server (2024-11-05): the endpoint event, answers on the stream, every revision,
and what a wrong POST gets (the session goes on after each)."""

from __future__ import annotations

import anyio
import httpx
import pytest

from mcpframe import protocol
from mcpframe.http.legacy import PING
from mcpframe.http.server import StreamableHTTPServer

from ._server_support import AsgiStream, init_body, live, make_server, open_stream

pytestmark = pytest.mark.anyio

PING_REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "ping"}


def echo(rid: int, text: str) -> dict[str, object]:
    params = {"name": "echo", "arguments": {"text": text}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def test_the_endpoint_event_then_answers_as_message_events() -> None:
    async with (
        live() as (base, app),
        httpx.AsyncClient(timeout=20) as http,
        open_stream(http, base) as stream,
    ):
        assert stream.endpoint.startswith("/messages/?session_id=")
        assert len(stream.session_id) >= 32  # token_urlsafe(24): as unguessable as an Mcp-Session-Id
        assert app.legacy is not None
        assert len(app.legacy) == 1
        accepted = await stream.post(init_body("2024-11-05"))
        assert (accepted.status_code, accepted.text) == (202, "Accepted")
        answer = await stream.next()
        assert answer["id"] == 1
        assert answer["result"]["protocolVersion"] == "2024-11-05"
        await stream.post(echo(2, "hi"))
        assert (await stream.next())["result"]["content"][0]["text"] == "hi"
        bare = stream.endpoint.replace("/messages/?", "/messages?")  # the path without its slash
        posted = await http.post(
            base + bare, json=echo(3, "bare"), headers={"content-type": "application/json"}
        )
        assert posted.status_code == 202
        assert (await stream.next())["id"] == 3


async def test_the_endpoint_names_the_root_path() -> None:
    app = StreamableHTTPServer(make_server())
    stream = AsgiStream(app, root_path="/mounted")
    async with anyio.create_task_group() as tg:
        tg.start_soon(stream.run)
        await stream.wait_for(b"\n\n")
        assert stream.status == 200
        assert stream.endpoint.startswith("/mounted/messages/?session_id=")
        stream.leave()


@pytest.mark.parametrize("version", protocol.LEGACY_VERSIONS)
async def test_every_legacy_revision_is_served(version: str) -> None:
    async with (
        live() as (base, _),
        httpx.AsyncClient(timeout=20) as http,
        open_stream(http, base) as stream,
    ):
        result = await stream.initialize(version)
        assert result["protocolVersion"] == version
        await stream.post(echo(2, version))
        assert (await stream.next())["result"]["content"][0]["text"] == version


async def test_batches_only_where_the_revision_has_them() -> None:
    batch = [PING_REQUEST, {**PING_REQUEST, "id": 8}]
    async with (
        live() as (base, _),
        httpx.AsyncClient(timeout=20) as http,
        open_stream(http, base) as stream,
    ):
        await stream.initialize("2025-03-26")
        assert (await stream.post(batch)).status_code == 202
        answered = await stream.next()
        assert isinstance(answered, list)
        assert sorted(a["id"] for a in answered) == [7, 8]
        async with open_stream(http, base) as later:
            await later.initialize("2025-06-18")
            refused = await later.post(batch)
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == -32600


async def test_malformed_bodies_get_400_and_the_session_goes_on() -> None:
    async with (
        live() as (base, _),
        httpx.AsyncClient(timeout=20) as http,
        open_stream(http, base) as stream,
    ):
        await stream.initialize()
        parse = await stream.post(b'{"jsonrpc": "2.0", "id": 3, "method": ')
        assert parse.status_code == 400
        assert parse.json()["error"]["code"] == -32700
        invalid = await stream.post({"jsonrpc": "2.0", "id": 4})
        assert invalid.status_code == 400
        assert invalid.json()["error"]["code"] == -32600
        empty = await stream.post(b"")
        assert (empty.status_code, empty.json()["error"]["code"]) == (400, -32700)
        await stream.post(echo(5, "still here"))
        answer = await stream.next()
        assert (answer["id"], answer["result"]["content"][0]["text"]) == (5, "still here")


async def test_posts_without_a_live_session() -> None:
    async with live(max_body=1024) as (base, _), httpx.AsyncClient(timeout=20) as http:
        missing = await http.post(base + "/messages/", json=PING_REQUEST)
        assert missing.status_code == 400
        assert "session_id" in missing.json()["error"]["message"]
        unknown = await http.post(base + "/messages/?session_id=nope", json=PING_REQUEST)
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == -32600
        async with open_stream(http, base) as stream:
            wrong_type = await stream.post(b"{}", **{"content-type": "text/plain"})
            assert wrong_type.status_code == 415
            too_big = await stream.post({"jsonrpc": "2.0", "method": "x", "params": {"p": "x" * 2000}})
            assert too_big.status_code == 413
            endpoint = stream.endpoint
        with anyio.fail_after(10):
            while (closed := await http.post(base + endpoint, json=PING_REQUEST)).status_code == 202:
                await anyio.lowlevel.checkpoint()  # the server notices the disconnect on its own loop turn
        assert closed.status_code == 404
        assert (await http.get(base + "/messages/")).status_code == 405
        assert (await http.post(base + "/sse", json=PING_REQUEST)).status_code == 405


async def test_a_quiet_stream_gets_keepalive_comments() -> None:
    async with (
        live(keepalive=0.05) as (base, _),
        httpx.AsyncClient(timeout=20) as http,
        http.stream("GET", base + "/sse", headers={"accept": "text/event-stream"}) as response,
    ):
        seen = b""
        with anyio.fail_after(10):
            async for chunk in response.aiter_raw():
                seen += chunk
                if seen.count(PING) >= 2:
                    break
        assert seen.startswith(b"event: endpoint\ndata: /messages/?session_id=")


async def test_a_get_that_does_not_accept_sse_is_refused() -> None:
    async with live() as (base, _), httpx.AsyncClient(timeout=20) as http:
        refused = await http.get(base + "/sse", headers={"accept": "application/json"})
        assert refused.status_code == 406
