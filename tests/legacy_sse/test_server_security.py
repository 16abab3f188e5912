"""The legacy paths get the checks of `/mcp`: Host/Origin allow-lists, bearer tokens (sessions belong to
their token's subject), and `legacy_sse=False` turns them off."""

from __future__ import annotations

import argparse

import httpx
import pytest

from mcpframe.cli.http_flags import add_http_flags, http_options
from mcpframe.http.security import AccessToken, BearerAuth
from mcpframe.http.server import HttpOptions, StreamableHTTPServer

from ._server_support import asgi_post, live, make_server, open_stream

pytestmark = pytest.mark.anyio

SSE = {"accept": "text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
TOKENS = {
    "good": AccessToken(subject="alice", scopes=frozenset({"mcp"})),
    "bob": AccessToken(subject="bob", scopes=frozenset({"mcp"})),
}


async def verify(token: str) -> AccessToken | None:
    return TOKENS.get(token)


AUTH = BearerAuth(verify, "http://127.0.0.1:8000/mcp", ["https://auth.example"], scopes=["mcp"])


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example"}, 421),
        ({"origin": "https://evil.example"}, 403),
    ],
)
async def test_host_and_origin_are_checked_on_both_paths(headers: dict[str, str], status: int) -> None:
    async with live() as (base, _), httpx.AsyncClient(timeout=20) as http:
        got = await http.get(base + "/sse", headers={**SSE, **headers})
        assert got.status_code == status
        posted = await http.post(base + "/messages/?session_id=x", json=PING, headers=headers)
        assert posted.status_code == status


async def test_bearer_tokens_and_owners() -> None:
    async with live(auth=AUTH) as (base, _), httpx.AsyncClient(timeout=20) as http:
        refused = await http.get(base + "/sse", headers=SSE)
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert "resource_metadata=" in challenge
        alice = {"authorization": "Bearer good"}
        async with open_stream(http, base, **alice) as stream:
            assert (await stream.post(PING)).status_code == 401  # every POST carries the token
            assert (await stream.post(PING, **alice)).status_code == 202
            assert (await stream.next())["id"] == 1
            theirs = await stream.post(PING, authorization="Bearer bob")
            assert theirs.status_code == 404  # another subject's session does not exist for bob


async def test_the_flag_off_leaves_the_legacy_paths_404() -> None:
    app = StreamableHTTPServer(make_server(), HttpOptions(legacy_sse=False))
    assert app.legacy is None
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
        assert (await http.get("/sse", headers=SSE)).status_code == 404
    assert (await asgi_post(app, "/messages/?session_id=x", PING))[0] == 404


def test_the_cli_flag_turns_it_off() -> None:
    parser = argparse.ArgumentParser()
    add_http_flags(parser)
    assert http_options(parser.parse_args([])).legacy_sse is True
    assert http_options(parser.parse_args(["--no-legacy-sse"])).legacy_sse is False
