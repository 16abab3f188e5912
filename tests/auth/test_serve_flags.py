"""`mcpframe serve --http --auth-jwks/--auth-introspect`: the flags, and the server they make, end to end.

The end-to-end tests start `mcpframe serve examples.everything:server --http` (one child each) verifying
tokens of the in-test authorization server, read its resource metadata and 401 challenge, and connect
with mcpframe's client credentials provider.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import httpx
import pytest
from tests.conformance.harness import serve_everything_http

from mcpframe.cli.http_flags import add_http_flags, http_options, http_warnings
from mcpframe.http import connect
from mcpframe.http.auth import ClientCredentialsProvider
from mcpframe.http.security import BearerAuth, ListeningBearerAuth
from mcpframe.http.verify import IntrospectionVerifier, JwtVerifier

from ._authserver import AUDIENCE, INTROSPECTOR, SERVICE, AuthServer

pytestmark = pytest.mark.anyio


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_http_flags(parser)
    return parser.parse_args(list(argv))


def test_jwks_flags_make_a_jwt_verifying_auth() -> None:
    args = parse("--auth-jwks", "https://as/jwks", "--auth-issuer", "https://as", "--auth-audience", "a")
    auth = http_options(args).auth
    assert isinstance(auth, ListeningBearerAuth)
    assert isinstance(auth.verify, JwtVerifier)
    assert auth.authorization_servers == ["https://as"]  # the issuer, when no --auth-server
    assert auth.resource == "http://127.0.0.1:8000/mcp"


def test_introspection_flags_with_a_fixed_resource_and_scopes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPFRAME_AUTH_CLIENT_SECRET", "s")
    args = parse(
        "--auth-introspect", "https://as/introspect", "--auth-client-id", "rs", "--auth-server", "https://as",
        "--auth-scope", "mcp", "--auth-scope", "read", "--auth-resource", "https://mcp.example/mcp",
        "--host", "0.0.0.0", "--allow-host", "mcp.example",
    )  # fmt: skip
    auth = http_options(args).auth
    assert type(auth) is BearerAuth
    assert isinstance(auth.verify, IntrospectionVerifier)
    assert auth.resource == "https://mcp.example/mcp"
    assert list(auth.scopes) == ["mcp", "read"]
    assert http_warnings(args) == []  # verified: no "no authentication" warning


def test_beyond_loopback_the_resource_url_must_be_given() -> None:
    args = parse(
        "--auth-jwks", "u", "--auth-issuer", "i", "--auth-audience", "a", "--host", "0.0.0.0",
        "--allow-host", "mcp.example",
    )  # fmt: skip
    [warning] = http_warnings(args)
    assert "--auth-resource" in warning
    assert "http://0.0.0.0:8000/mcp" in warning


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--auth-jwks", "u", "--auth-introspect", "v", "--auth-server", "s"], "alternatives"),
        (["--auth-jwks", "u", "--auth-issuer", "i"], "--auth-audience"),
        (["--auth-introspect", "v"], "--auth-server"),
        (["--auth-introspect", "v", "--auth-server", "s", "--auth-token", "t"], "--auth-token"),
    ],
)
def test_bad_combinations_say_which_flag(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        http_options(parse(*argv))


@pytest.fixture(scope="module")
def authority() -> Any:
    server = AuthServer()
    server.start()
    yield server
    server.stop()


def serve_flags(mode: str, authority: AuthServer) -> list[str]:
    common = ["--auth-issuer", authority.url, "--auth-audience", AUDIENCE, "--auth-scope", "mcp"]
    if mode == "jwks":
        return ["--auth-jwks", authority.url + "/jwks", *common]
    client = ["--auth-client-id", INTROSPECTOR[0], "--auth-client-secret", INTROSPECTOR[1]]
    return ["--auth-introspect", authority.url + "/introspect", *client, *common]


@pytest.mark.parametrize("mode", ["jwks", "introspect"])
async def test_serve_verifies_tokens_end_to_end(mode: str, authority: AuthServer) -> None:
    with serve_everything_http(serve_flags(mode, authority)) as url:
        async with httpx.AsyncClient() as http:
            base = url.rsplit("/mcp", 1)[0]
            metadata = (await http.get(base + "/.well-known/oauth-protected-resource/mcp")).json()
            assert metadata["resource"] == url
            assert metadata["authorization_servers"] == [authority.url]
            assert metadata["scopes_supported"] == ["mcp"]
            refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401
            assert "resource_metadata=" in refused.headers["www-authenticate"]
            stranger = authority.token("x", "mcp", aud="another")
            forged = await http.post(url, json={}, headers={"authorization": f"Bearer {stranger}"})
            assert forged.status_code == 401
        auth = ClientCredentialsProvider(url, client_id=SERVICE[0], client_secret=SERVICE[1])
        with anyio.fail_after(20):
            async with connect(url, auth=auth, mode="legacy") as client:
                tools = await client.list_tools()
        assert tools
