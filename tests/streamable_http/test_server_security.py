"""Streamable HTTP server: Host/Origin allow-lists and bearer tokens (in process)."""

from __future__ import annotations

import pytest

from mcpframe.http.security import AccessToken, BearerAuth, HostGuard

from ._server_support import JSON_AND_SSE, asgi_client, init_body, session_headers

pytestmark = pytest.mark.anyio

PING = {"jsonrpc": "2.0", "id": 3, "method": "ping"}


@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        ("evil.example.com", "http://evil.example.com", 421),
        ("127.0.0.1:8000", "http://evil.example.com", 403),
        ("evil.example.com:8000", None, 421),
        ("127.0.0.1:8000", "http://127.0.0.1:8000", 200),
        ("localhost:1234", "http://localhost:5173", 200),
        ("[::1]:8000", None, 200),
    ],
)
async def test_dns_rebinding_protection(host: str, origin: str | None, status: int) -> None:
    headers = {**JSON_AND_SSE, "host": host}
    if origin is not None:
        headers["origin"] = origin
    async with asgi_client() as (client, http):
        response = await client.post("/mcp", json=init_body(), headers=headers)
        assert response.status_code == status
        if status != 200:
            assert "error" in response.json()
            assert http.sessions.sessions == {}


async def test_custom_allow_lists() -> None:
    async with asgi_client(allowed_hosts=["mcp.example.com"], allowed_origins=["https://app.example"]) as (
        client,
        _,
    ):
        ok = {**JSON_AND_SSE, "host": "mcp.example.com", "origin": "https://app.example"}
        assert (await client.post("/mcp", json=init_body(), headers=ok)).status_code == 200
        loop = {**JSON_AND_SSE, "host": "127.0.0.1:8000"}
        assert (await client.post("/mcp", json=init_body(), headers=loop)).status_code == 421


def test_host_guard_matching() -> None:
    guard = HostGuard.create(["a.example:443", "b.example"], ["https://a.example"])
    assert guard.check("a.example:443", None) is None
    assert guard.check("a.example:80", None) == (
        421,
        "Misdirected Request: host 'a.example:80' is not allowed",
    )
    assert guard.check("B.EXAMPLE:9", "https://a.example/") is None
    assert guard.check("b.example", "https://a.example:8443") is None
    assert guard.check(None, None) is not None
    assert HostGuard.create(["*"], ["*"]).check("anything", "null") is None


TOKENS = {
    "good": AccessToken(subject="alice", scopes=frozenset({"mcp"})),
    "bob": AccessToken(subject="bob", scopes=frozenset({"mcp"})),
    "weak": AccessToken(subject="carol", scopes=frozenset()),
}


async def verify(token: str) -> AccessToken | None:
    return TOKENS.get(token)


AUTH = BearerAuth(verify, "http://127.0.0.1:8000/mcp", ["https://auth.example"], scopes=["mcp"])


async def test_bearer_tokens_401_403_and_metadata() -> None:
    async with asgi_client(auth=AUTH) as (client, _):
        missing = await client.post("/mcp", json=init_body(), headers=JSON_AND_SSE)
        assert missing.status_code == 401
        challenge = missing.headers["www-authenticate"]
        metadata_url = "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{metadata_url}"' in challenge
        bad = await client.post(
            "/mcp", json=init_body(), headers={**JSON_AND_SSE, "authorization": "Bearer x"}
        )
        assert bad.status_code == 401
        assert 'error="invalid_token"' in bad.headers["www-authenticate"]
        weak = {**JSON_AND_SSE, "authorization": "Bearer weak"}
        refused = await client.post("/mcp", json=init_body(), headers=weak)
        assert refused.status_code == 403
        assert "insufficient_scope" in refused.headers["www-authenticate"]
        metadata = (await client.get("/.well-known/oauth-protected-resource/mcp")).json()
        assert metadata["resource"] == AUTH.resource
        assert metadata["authorization_servers"] == ["https://auth.example"]
        assert metadata["scopes_supported"] == ["mcp"]


async def test_sessions_belong_to_their_token_subject() -> None:
    async with asgi_client(auth=AUTH) as (client, _):
        alice = {**JSON_AND_SSE, "authorization": "Bearer good"}
        response = await client.post("/mcp", json=init_body(), headers=alice)
        assert response.status_code == 200
        session_id = response.headers["mcp-session-id"]
        mine = {**session_headers(session_id), "authorization": "Bearer good"}
        assert (await client.post("/mcp", json=PING, headers=mine)).status_code == 200
        theirs = {**mine, "authorization": "Bearer bob"}
        assert (await client.post("/mcp", json=PING, headers=theirs)).status_code == 404
