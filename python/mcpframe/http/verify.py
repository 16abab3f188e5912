"""Bearer verification against an authorization server: the `TokenVerifier`s of an OAuth resource server.

- `JwtVerifier`: the access token is a JWT (RFC 9068) signed with a key of the server's JWKS. The key set
  is fetched with PyJWT's `PyJWKClient` in a worker thread (its fetch blocks), kept by key id, fetched
  again when a token names a key not in it (at most once per `refetch_interval`, so a flood of made-up
  key ids cannot make us hammer the server) and when it is older than `max_age` (revoked keys go away).
  Checked: the signature with an asymmetric algorithm the key allows, `exp` (and `nbf`, `iat`) with
  `leeway`, `iss`, `aud`. An accepted token is remembered for `cache_seconds` (never past its `exp`), so
  a client sending the same token with every request pays the signature check (~100-140 us of CPU)
  once; a key removed from the set stops working within `max_age` plus `cache_seconds`.
- `IntrospectionVerifier`: the token is opaque; RFC 7662 introspection decides (the resource server
  authenticates with its client id and secret, `client_secret_basic`). Checked: `active`, `exp`, and
  `iss`/`aud` when configured. Answers are kept for `cache_seconds` (never past the token's expiry).

Both caches (`TokenCache`) are bounded (`max_cached`, least recently used out first) and keyed by the
token's SHA-256; only accepted tokens are kept, so made-up tokens cannot fill them.

Scopes come from the `scope` claim (a space-separated string) or `scp` (a list); the required ones are
`BearerAuth.scopes` (a token without them is a 403 `insufficient_scope`, see `security`). Neither
verifier raises: a token it cannot accept is `None`, the reason logged at debug level.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .security import AccessToken

if TYPE_CHECKING:
    import jwt

__all__ = ["ASYMMETRIC_ALGORITHMS", "IntrospectionVerifier", "JwtVerifier", "TokenCache", "token_scopes"]

logger = logging.getLogger("mcpframe.http.verify")

ASYMMETRIC_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip
"""The JWS algorithms a `JwtVerifier` accepts by default: public-key ones only (never `none` or HS*)."""


def token_scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token's claims grant: `scope` (RFC 9068, space-separated) or `scp` (a list)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, str):
        return frozenset(scp.split())
    if isinstance(scp, list):
        return frozenset(s for s in scp if isinstance(s, str))
    return frozenset()


def _access(claims: dict[str, Any]) -> AccessToken:
    subject = claims.get("sub")
    return AccessToken(subject if isinstance(subject, str) else None, token_scopes(claims), claims)


class TokenCache:
    """Accepted tokens, by their SHA-256, each until a deadline (`time.time()`); at most `size`, the least
    recently used dropped first. A hit costs a hash instead of a signature check or an HTTP round trip."""

    def __init__(self, seconds: float, size: int) -> None:
        self.seconds = seconds
        self.size = size
        self._entries: collections.OrderedDict[bytes, tuple[float, AccessToken]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, digest: bytes, now: float) -> AccessToken | None:
        """The cached facts of the token with this digest, while its deadline is ahead."""
        hit = self._entries.get(digest)
        if hit is None:
            return None
        if hit[0] <= now:
            del self._entries[digest]
            return None
        self._entries.move_to_end(digest)
        return hit[1]

    async def through(
        self, token: str, verify: Callable[[str, float], Awaitable[AccessToken | None]]
    ) -> AccessToken | None:
        """The cached facts of `token`, else what `verify(token, now)` finds (kept when it accepts it)."""
        digest = hashlib.sha256(token.encode()).digest()
        now = time.time()
        cached = self.get(digest, now)
        if cached is not None:
            return cached
        access = await verify(token, now)
        if access is not None:
            self.put(digest, access, now)
        return access

    def put(self, digest: bytes, access: AccessToken, now: float) -> None:
        """Keep `access` for `seconds`, never past the token's own `exp`."""
        if self.seconds <= 0 or self.size <= 0:
            return
        until = now + self.seconds
        exp = access.claims.get("exp")
        if isinstance(exp, (int, float)):
            until = min(until, float(exp))
        self._entries[digest] = (until, access)
        self._entries.move_to_end(digest)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)


class JwtVerifier:
    """A `TokenVerifier` for JWT access tokens signed by the keys at `jwks_url`, issued by `issuer` for
    `audience` (see the module doc)."""

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str,
        audience: str | Iterable[str],
        algorithms: Iterable[str] = ASYMMETRIC_ALGORITHMS,
        leeway: float = 30.0,
        refetch_interval: float = 30.0,
        max_age: float = 300.0,
        timeout: float = 10.0,
        cache_seconds: float = 30.0,
        max_cached: int = 4096,
    ) -> None:
        import jwt  # noqa: PLC0415 - the auth extra, imported when a verifier is made

        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        self.algorithms = frozenset(algorithms) - {"none"}
        self.leeway = leeway
        self.refetch_interval = refetch_interval
        self.max_age = max_age
        self._client = jwt.PyJWKClient(jwks_url, cache_jwk_set=False, timeout=timeout)
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()
        self.cache = TokenCache(cache_seconds, max_cached)

    async def __call__(self, token: str) -> AccessToken | None:
        """The token's facts when it is valid, else None."""
        return await self.cache.through(token, self._verify)

    async def _verify(self, token: str, now: float) -> AccessToken | None:
        # `now` goes unused: PyJWT checks `exp` and `nbf` against its own clock
        import jwt  # noqa: PLC0415

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        alg = header.get("alg")
        if alg not in self.algorithms:
            logger.debug("refused a JWT signed with %r", alg)
            return None
        key = await self._key(header.get("kid"))
        if key is None:
            return None
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            logger.debug("refused a JWT: %s", exc)
            return None
        return _access(claims)

    async def _key(self, kid: Any) -> jwt.PyJWK | None:
        fresh = self._fetched_at is not None and time.monotonic() - self._fetched_at < self.max_age
        key = self._keys.get(kid) if isinstance(kid, str) or kid is None else None
        if key is not None and fresh:
            return key
        async with self._lock:
            now = time.monotonic()
            recent = self._fetched_at is not None and now - self._fetched_at < self.refetch_interval
            if not recent:
                await self._fetch()
            return self._keys.get(kid) if isinstance(kid, str) or kid is None else None

    async def _fetch(self) -> None:
        import jwt  # noqa: PLC0415

        self._fetched_at = time.monotonic()
        try:
            keyset = await anyio.to_thread.run_sync(self._client.get_jwk_set, True)
        except jwt.PyJWTError as exc:
            logger.warning("fetching the JWKS failed: %s", exc)
            return
        keys: dict[str | None, jwt.PyJWK] = {k.key_id: k for k in keyset.keys}
        if len(keyset.keys) == 1:
            keys[None] = keyset.keys[0]  # a token without `kid`: the only key
        self._keys = keys


class IntrospectionVerifier:
    """A `TokenVerifier` asking the authorization server's introspection endpoint (RFC 7662) about each
    token (see the module doc)."""

    def __init__(
        self,
        url: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        cache_seconds: float = 30.0,
        max_cached: int = 1024,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.issuer = issuer
        self.audience = audience
        self._auth = httpx.BasicAuth(client_id, client_secret or "") if client_id is not None else None
        self._http = http_client
        self._own_http = http_client is None
        self.cache = TokenCache(cache_seconds, max_cached)

    async def __call__(self, token: str) -> AccessToken | None:
        """The token's facts when the server says it is active (and for us), else None."""
        return await self.cache.through(token, self._checked)

    async def _checked(self, token: str, now: float) -> AccessToken | None:
        claims = await self._introspect(token)
        if claims is None or not self._acceptable(claims, now):
            return None
        return _access(claims)

    async def _introspect(self, token: str) -> dict[str, Any] | None:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=10.0)
        data = {"token": token, "token_type_hint": "access_token"}
        try:
            auth = self._auth if self._auth is not None else httpx.USE_CLIENT_DEFAULT
            response = await self._http.post(
                self.url, data=data, auth=auth, headers={"accept": "application/json"}
            )
            body = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            logger.warning("token introspection at %s failed: %r", self.url, exc)
            return None
        if response.status_code != 200:
            logger.warning("token introspection at %s answered HTTP %d", self.url, response.status_code)
        return body if isinstance(body, dict) else None

    def _acceptable(self, claims: Mapping[str, Any], now: float) -> bool:
        if claims.get("active") is not True:
            return False
        exp = claims.get("exp")
        if isinstance(exp, (int, float)) and exp <= now:
            return False
        if self.issuer is not None and claims.get("iss") != self.issuer:
            logger.debug("refused a token of issuer %r", claims.get("iss"))
            return False
        if self.audience is not None:
            aud = claims.get("aud")
            audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if self.audience not in audiences:
                logger.debug("refused a token for audience %r", aud)
                return False
        return True

    async def aclose(self) -> None:
        """Close the HTTP client it made (not one it was given)."""
        if self._http is not None and self._own_http:
            await self._http.aclose()
