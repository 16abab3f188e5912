"""The discovery rules (`auth_metadata`) and the endpoint requests (`auth_endpoints`), no network:
`httpx.MockTransport` plays the servers and records what was asked, in order."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcpframe.http.auth_endpoints import (
    Discovery,
    OAuthFlowError,
    SigningKey,
    choose_auth_method,
    client_assertion,
    discover,
    register,
)
from mcpframe.http.auth_metadata import (
    canonical_resource,
    parse_challenge,
    resource_covers,
    resource_metadata_urls,
    select_scope,
    server_metadata_urls,
    union_scope,
)
from mcpframe.http.auth_storage import OAuthToken

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            'Bearer resource_metadata="https://r/x", scope="a b"',
            {"resource_metadata": "https://r/x", "scope": "a b"},
        ),
        ('Bearer error="insufficient_scope",scope=a', {"error": "insufficient_scope", "scope": "a"}),
        ('Basic realm="x", Bearer realm="a\\"b"', {"realm": 'a"b'}),
        ('Bearer scope="a", Basic realm="x"', {"scope": "a"}),
        ("bearer", {}),
        ('Basic realm="x"', {}),
        (None, {}),
    ],
)
def test_parse_challenge(header: str | None, expected: dict[str, str]) -> None:
    assert parse_challenge(header) == expected


def test_metadata_urls_in_the_specifications_order() -> None:
    assert resource_metadata_urls("https://h/mcp/", "https://h/custom.json") == [
        "https://h/custom.json",
        "https://h/.well-known/oauth-protected-resource/mcp",
        "https://h/.well-known/oauth-protected-resource",
    ]
    assert resource_metadata_urls("https://h", None) == ["https://h/.well-known/oauth-protected-resource"]
    assert server_metadata_urls("https://as/tenant1") == [
        "https://as/.well-known/oauth-authorization-server/tenant1",
        "https://as/.well-known/openid-configuration/tenant1",
        "https://as/tenant1/.well-known/openid-configuration",
    ]
    assert server_metadata_urls("https://as/") == [
        "https://as/.well-known/oauth-authorization-server",
        "https://as/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("resource", "url", "covers"),
    [
        ("https://h/mcp", "https://h/mcp", True),
        ("https://H/mcp/", "https://h/mcp", True),
        ("https://h", "https://h/mcp", True),
        ("https://h/mcp", "https://h/mcpx", False),
        ("https://evil/mcp", "https://h/mcp", False),
        ("http://h/mcp", "https://h/mcp", False),
    ],
)
def test_resource_covers(resource: str, url: str, covers: bool) -> None:
    assert resource_covers(resource, url) is covers


def test_scope_selection() -> None:
    assert canonical_resource("HTTPS://H/mcp/?q#f") == "https://h/mcp"
    assert select_scope({"scope": "a"}, {"scopes_supported": ["b"]}, None) == "a"
    assert select_scope({}, {"scopes_supported": ["b", "c"]}, None) == "b c"
    assert select_scope({}, {}, None) is None
    offline = {"scopes_supported": ["b", "offline_access"]}
    assert select_scope({"scope": "b"}, None, offline, offline=True) == "b offline_access"
    assert select_scope({"scope": "b"}, None, {"scopes_supported": ["b"]}, offline=True) == "b"
    assert union_scope("a b", "b c") == "a b c"


def servers(routes: Mapping[str, Any], asked: list[str]) -> httpx.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        body = routes.get(str(request.url))
        return httpx.Response(404) if body is None else httpx.Response(200, json=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


def asm(issuer: str, **extra: Any) -> dict[str, Any]:
    return {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/a",
        "token_endpoint": issuer + "/t",
        **extra,
    }


async def test_discovery_follows_the_resource_metadata_to_the_server() -> None:
    asked: list[str] = []
    routes = {
        "https://h/.well-known/oauth-protected-resource": {
            "resource": "https://h",
            "authorization_servers": ["https://as/t1"],
        },
        "https://as/t1/.well-known/openid-configuration": asm("https://as/t1"),
    }
    async with servers(routes, asked) as http:
        found = await discover(http, "https://h/mcp", None)
    assert found.resource == "https://h"
    assert found.token_endpoint == "https://as/t1/t"
    assert asked == [
        "https://h/.well-known/oauth-protected-resource/mcp",
        "https://h/.well-known/oauth-protected-resource",
        "https://as/.well-known/oauth-authorization-server/t1",
        "https://as/.well-known/openid-configuration/t1",
        "https://as/t1/.well-known/openid-configuration",
    ]


async def test_without_any_metadata_the_2025_03_26_default_paths() -> None:
    async with servers({}, []) as http:
        found = await discover(http, "https://h/mcp", None)
    assert (found.authorization_endpoint, found.token_endpoint) == ("https://h/authorize", "https://h/token")
    assert found.registration_endpoint == "https://h/register"
    assert found.resource == "https://h/mcp"


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        (
            {
                "https://h/.well-known/oauth-protected-resource/mcp": {
                    "resource": "https://evil/mcp",
                    "authorization_servers": ["https://as"],
                }
            },
            "does not cover",
        ),
        (
            {"https://h/.well-known/oauth-protected-resource/mcp": {"resource": "https://h/mcp"}},
            "names no authorization server",
        ),
        (
            {
                "https://h/.well-known/oauth-protected-resource/mcp": {
                    "authorization_servers": ["https://as"]
                },
                "https://as/.well-known/oauth-authorization-server": asm("https://other"),
            },
            "names issuer",
        ),
    ],
    ids=["resource-mismatch", "no-server", "issuer-mismatch"],
)
async def test_discovery_refuses_metadata_that_does_not_fit(routes: dict[str, Any], message: str) -> None:
    async with servers(routes, []) as http:
        with pytest.raises(OAuthFlowError, match=message):
            await discover(http, "https://h/mcp", None)


def found(**asm_fields: Any) -> Discovery:
    return Discovery(
        "https://h/mcp", "https://as", "https://as/a", "https://as/t", "https://as/r", None, asm_fields
    )


def test_auth_method_follows_what_the_server_supports() -> None:
    assert choose_auth_method(found(), has_secret=True) == "client_secret_basic"  # RFC 8414's default
    only_post = found(token_endpoint_auth_methods_supported=["client_secret_post"])
    assert choose_auth_method(only_post, has_secret=True) == "client_secret_post"
    assert (
        choose_auth_method(found(token_endpoint_auth_methods_supported=["none"]), has_secret=True) == "none"
    )
    assert choose_auth_method(found(), has_secret=False) == "none"


async def test_registration_reads_the_answer() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        assert sent["redirect_uris"] == ["http://127.0.0.1/cb"]
        return httpx.Response(201, json={"client_id": "c1", "client_secret": "s1"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        info = await register(http, found(), {"redirect_uris": ["http://127.0.0.1/cb"]})
    assert (info.client_id, info.client_secret, info.auth_method) == ("c1", "s1", "client_secret_basic")


def test_private_key_jwt_assertion_claims() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    assertion = client_assertion("cid", SigningKey(pem.decode(), "ES256"), "https://as")
    claims = jwt.decode(assertion, key.public_key(), algorithms=["ES256"], audience="https://as")
    assert claims["iss"] == claims["sub"] == "cid"
    assert claims["exp"] > claims["iat"]
    assert claims["jti"]


def test_token_responses() -> None:
    token = OAuthToken.from_response({"access_token": "a", "expires_in": 3600, "refresh_token": "r"})
    assert not token.expired()
    assert OAuthToken.from_response({"access_token": "a", "expires_in": 10}).expired()  # within the margin
    kept = OAuthToken.from_response({"access_token": "b"}, previous=token)
    assert kept.refresh_token == "r"
    assert kept.expires_at is None
    with pytest.raises(ValueError, match="access_token"):
        OAuthToken.from_response({"token_type": "Bearer"})
