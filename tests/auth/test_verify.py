"""The resource server's verifiers (`mcpframe.http.verify`) against the in-test authorization server."""

from __future__ import annotations

import time

import httpx
import jwt
import pytest

from mcpframe.http.security import AccessToken
from mcpframe.http.verify import IntrospectionVerifier, JwtVerifier, TokenCache, token_scopes

from ._authserver import AUDIENCE, INTROSPECTOR, AuthServer

pytestmark = pytest.mark.anyio


def jwt_verifier(authsrv: AuthServer, **kw: float) -> JwtVerifier:
    return JwtVerifier(authsrv.url + "/jwks", issuer=authsrv.url, audience=AUDIENCE, **kw)


async def test_a_valid_jwt_gives_its_subject_and_scopes(authsrv: AuthServer) -> None:
    verify = jwt_verifier(authsrv)
    access = await verify(authsrv.token("alice", "mcp read"))
    assert access is not None
    assert access.subject == "alice"
    assert access.scopes == {"mcp", "read"}
    assert await verify(authsrv.token("bob", "mcp")) is not None
    assert authsrv.count("/jwks") == 1  # the key set is kept


@pytest.mark.parametrize(
    "claims",
    [
        {"aud": "another-resource"},
        {"iss": "http://evil.example"},
        {"exp": int(time.time()) - 3600},
        {"nbf": int(time.time()) + 3600},
    ],
    ids=["audience", "issuer", "expired", "not-yet-valid"],
)
async def test_a_jwt_for_someone_else_or_out_of_time_is_refused(
    authsrv: AuthServer, claims: dict[str, object]
) -> None:
    assert await jwt_verifier(authsrv)(authsrv.token("alice", "mcp", **claims)) is None


async def test_forged_and_malformed_tokens_are_refused(authsrv: AuthServer) -> None:
    verify = jwt_verifier(authsrv)
    claims = {"iss": authsrv.url, "aud": AUDIENCE, "sub": "eve", "exp": int(time.time()) + 60}
    # algorithm confusion: HS256 keyed with the public key's text must not pass as a signature
    public = authsrv.jwks()["keys"][0]
    forged = jwt.encode(claims, str(public), algorithm="HS256", headers={"kid": authsrv.kid})
    assert await verify(forged) is None
    unsigned = jwt.encode(claims, None, algorithm="none")
    assert await verify(unsigned) is None
    assert await verify("not.a.jwt") is None
    other = authsrv.token("eve", "mcp")
    assert await verify(other[:-4] + ("AAAA" if not other.endswith("AAAA") else "BBBB")) is None


async def test_unknown_key_ids_refetch_the_key_set_at_most_once_per_interval(authsrv: AuthServer) -> None:
    verify = jwt_verifier(authsrv, refetch_interval=3600)
    assert await verify(authsrv.token("alice", "mcp")) is not None
    fetched = authsrv.count("/jwks")
    authsrv.kid = "rotated"  # the server rotates its key id: unknown until the set is fetched again
    try:
        for _ in range(5):
            assert await verify(authsrv.token("alice", "mcp")) is None
        assert authsrv.count("/jwks") == fetched  # within the interval: no new fetch
        eager = jwt_verifier(authsrv, refetch_interval=0)
        assert await eager(authsrv.token("alice", "mcp")) is not None
    finally:
        authsrv.kid = "k1"


def test_scopes_from_scope_or_scp() -> None:
    assert token_scopes({"scope": "a b"}) == {"a", "b"}
    assert token_scopes({"scp": ["a", "b", 3]}) == {"a", "b"}
    assert token_scopes({"scp": "a"}) == {"a"}
    assert token_scopes({}) == frozenset()


async def test_introspection_accepts_active_tokens_and_caches_the_answer(authsrv: AuthServer) -> None:
    async with httpx.AsyncClient() as http:
        verify = IntrospectionVerifier(
            authsrv.url + "/introspect",
            client_id=INTROSPECTOR[0],
            client_secret=INTROSPECTOR[1],
            issuer=authsrv.url,
            audience=AUDIENCE,
            http_client=http,
        )
        token = authsrv.token("alice", "mcp")
        first = await verify(token)
        assert first is not None
        assert first.subject == "alice"
        assert first.scopes == {"mcp"}
        assert await verify(token) == first
        assert authsrv.count("/introspect") == 1  # the second answer came from the cache
        assert await verify("never-issued") is None
        assert await verify(authsrv.token("alice", "mcp", aud="elsewhere")) is None
        assert await verify(authsrv.token("alice", "mcp", expires_in=-10)) is None


async def test_introspection_with_wrong_credentials_accepts_nothing(authsrv: AuthServer) -> None:
    verify = IntrospectionVerifier(authsrv.url + "/introspect", client_id="rs", client_secret="wrong")
    try:
        assert await verify(authsrv.token("alice", "mcp")) is None
    finally:
        await verify.aclose()


async def test_the_introspection_cache_is_bounded(authsrv: AuthServer) -> None:
    verify = IntrospectionVerifier(
        authsrv.url + "/introspect", client_id=INTROSPECTOR[0], client_secret=INTROSPECTOR[1], max_cached=2
    )
    try:
        tokens = [authsrv.token(f"user{i}", "mcp") for i in range(4)]
        for token in tokens:
            assert await verify(token) is not None
        assert len(verify.cache) == 2
    finally:
        await verify.aclose()


def test_the_token_cache_keeps_accepted_tokens_until_their_expiry_within_its_bound() -> None:
    cache = TokenCache(seconds=60, size=2)
    now = 1000.0
    cache.put(b"a", AccessToken("a", claims={"exp": now + 5}), now)
    assert cache.get(b"a", now + 4) is not None
    assert cache.get(b"a", now + 5) is None  # its exp, before the cache's own 60 s
    for key in (b"b", b"c", b"d"):
        cache.put(key, AccessToken(key.decode()), now)
    assert len(cache) == 2
    assert cache.get(b"b", now) is None  # the least recently used went first
    assert cache.get(b"d", now + 59) is not None
    assert cache.get(b"d", now + 60) is None


async def test_a_verified_jwt_is_checked_once(authsrv: AuthServer) -> None:
    verify = jwt_verifier(authsrv)
    token = authsrv.token("alice", "mcp")
    first = await verify(token)
    assert first is not None
    verify._keys.clear()  # were the signature checked again, there would be no key for it now
    verify._fetched_at = time.monotonic()
    assert await verify(token) is first
