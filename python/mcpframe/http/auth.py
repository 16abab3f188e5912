"""The client authorizes itself (MCP authorization, 2025-11-25): `httpx.Auth` flows for `connect(auth=...)`.

- `OAuthClientProvider`: the authorization code grant with PKCE (S256) for a user. The application shows
  the authorization URL (`redirect_handler`) and hands back the code and state the redirect carried
  (`callback_handler`); `LoopbackCallback` (`auth_loopback`) does both for a command-line tool.
- `ClientCredentialsProvider`: the client credentials grant for a machine (a secret, or `private_key_jwt`).

Both send the stored token as `Authorization: Bearer`; on a 401 they discover the authorization server
from the challenge and the metadata documents (`auth_endpoints.discover`), register when no client id is
known (RFC 7591, or a client ID metadata document URL the server accepts), obtain a token naming the
server as the resource (RFC 8707), and send the request again. An expired token is refreshed first; a 403
`insufficient_scope` asks for the union of the scopes (step-up) once per new scope and at most
`max_step_ups` times for one request, so a server that never grants ends the loop. Tokens and the
registration live in a `TokenStorage` (memory by default).

Why our own `httpx.Auth` over authlib's primitives rather than authlib's `AsyncOAuth2Client`: the transports
own their `httpx.AsyncClient` and take an `Auth`, the discovery chain is MCP's, not OAuth's, and the
authorization step is the application's callback; authlib gives the PKCE challenge and the random values,
PyJWT signs the client assertion. The requests to the authorization server go through a short-lived client
of their own (`oauth_client` replaces it), so the MCP connection pool is never held by them.
"""

from __future__ import annotations

import abc
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Mapping
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx

from mcpframe._extras import install_hint

from .auth_endpoints import (
    Discovery,
    OAuthFlowError,
    SigningKey,
    choose_auth_method,
    discover,
    register,
    request_token,
)
from .auth_metadata import parse_challenge, select_scope, union_scope
from .auth_storage import ClientInfo, InMemoryTokenStorage, OAuthToken, TokenStorage
from .client_wire import shared_ssl_context

__all__ = [
    "CallbackHandler",
    "ClientCredentialsProvider",
    "OAuthClientProvider",
    "OAuthFlow",
    "OAuthFlowError",
    "RedirectHandler",
    "SigningKey",
]

logger = logging.getLogger("mcpframe.http.auth")

RedirectHandler = Callable[[str], Awaitable[None]]
"""Given the authorization URL: send the user there (open a browser, print it)."""
CallbackHandler = Callable[[], Awaitable[tuple[str, str | None]]]
"""Wait for the redirect back and return its `code` and `state`."""

OAUTH_TIMEOUT = 30.0  # seconds for one request to an authorization server


class OAuthFlow(httpx.Auth, abc.ABC):
    """What every grant shares: the bearer header, the 401/403 handling, refresh, discovery, storage.

    A subclass implements `_grant(http, discovery, scope) -> OAuthToken` (one grant at the token
    endpoint); the providers below, and `auth_identity.IdentityAssertionProvider`, are such subclasses.
    """

    requires_request_body = True  # the request may be sent twice

    def __init__(
        self,
        server_url: str,
        *,
        storage: TokenStorage | None,
        scope: str | None,
        max_step_ups: int,
        oauth_client: httpx.AsyncClient | None,
    ) -> None:
        self.server_url = server_url
        self.storage: TokenStorage = storage if storage is not None else InMemoryTokenStorage()
        self.scope = scope
        self.max_step_ups = max_step_ups
        self._oauth_client = oauth_client
        self._lock = anyio.Lock()
        self._discovery: Discovery | None = None
        self._requested: str | None = None  # the scope asked for the current token

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Not supported: the flow awaits the application's callbacks and the storage."""
        raise RuntimeError("mcpframe's OAuth providers work with httpx.AsyncClient only")
        yield request  # pragma: no cover - makes this a generator

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Sign `request`; on 401 (or 403 insufficient_scope) obtain a token and send it again."""
        token = await self._usable_token()
        if token is not None and self._requested is None:
            self._requested = token.scope  # a stored token (another process): what it was granted
        _sign(request, token)
        response = yield request
        step_ups = 0
        while True:
            challenge = parse_challenge(response.headers.get("www-authenticate"))
            if response.status_code == 401:
                token = await self._recover(token, challenge, step_up=False)
            elif response.status_code == 403 and challenge.get("error") == "insufficient_scope":
                if step_ups >= self.max_step_ups or not self._adds_scope(challenge):
                    return  # the server will not grant more: the 403 is the answer
                step_ups += 1
                token = await self._recover(token, challenge, step_up=True)
            else:
                return
            if token is None:
                return
            _sign(request, token)
            response = yield request
            if response.status_code == 401:
                return  # a fresh token refused: say so rather than loop

    def _adds_scope(self, challenge: Mapping[str, str]) -> bool:
        wanted = set((challenge.get("scope") or "").split())
        return bool(wanted - set((self._requested or "").split()))

    async def _usable_token(self) -> OAuthToken | None:
        token = await self.storage.get_tokens()
        if token is None or not token.expired():
            return token
        async with self._lock:
            current = await self.storage.get_tokens()
            if current is not None and current.access_token != token.access_token and not current.expired():
                return current  # another request refreshed it meanwhile
            if token.refresh_token is not None:
                return await self._refresh(token)
            await self.storage.set_tokens(None)
            if self._renews_alone and self._discovery is not None:
                # no user in this grant: a new token now saves the request a 401 and a second send
                asked = {"scope": self._requested} if self._requested else {}
                return await self._obtain(asked, step_up=False)
            return None

    async def _recover(
        self, sent: OAuthToken | None, challenge: Mapping[str, str], *, step_up: bool
    ) -> OAuthToken | None:
        """A token to send again after the server refused `sent`."""
        async with self._lock:
            current = await self.storage.get_tokens()
            newer = current is not None and (sent is None or current.access_token != sent.access_token)
            if newer and (not step_up or not self._adds_scope(challenge)):
                return current  # another request obtained one meanwhile
            if not step_up and current is not None and current.refresh_token is not None:
                refreshed = await self._refresh(current)
                if refreshed is not None:
                    return refreshed
            return await self._obtain(challenge, step_up=step_up)

    async def _obtain(self, challenge: Mapping[str, str], *, step_up: bool) -> OAuthToken:
        """Discover (when not done, or when the challenge names metadata), grant, store (under the lock)."""
        async with self._http() as http:
            if self._discovery is None or challenge.get("resource_metadata"):
                self._discovery = await discover(http, self.server_url, challenge.get("resource_metadata"))
            scope = self._scope_for(challenge, step_up=step_up)
            token = await self._grant(http, self._discovery, scope)
        self._requested = scope
        await self.storage.set_tokens(token)
        return token

    def _scope_for(self, challenge: Mapping[str, str], *, step_up: bool) -> str | None:
        if step_up:
            return union_scope(self._requested, challenge.get("scope"))
        if self.scope is not None:
            return self.scope
        assert self._discovery is not None
        found = self._discovery
        return select_scope(
            challenge, found.resource_metadata, found.server_metadata, offline=self._offline()
        )

    def _offline(self) -> bool:
        return False

    _renews_alone = False
    """Whether an expired token is replaced before the request (grants without a user)."""

    async def _refresh(self, token: OAuthToken) -> OAuthToken | None:
        """Use the refresh token (discovering the token endpoint first in a new process); None, and the
        token forgotten, when the server refuses it."""
        client = await self.storage.get_client_info()
        if client is None or token.refresh_token is None:
            return None
        grant = {"grant_type": "refresh_token", "refresh_token": token.refresh_token}
        try:
            async with self._http() as http:
                if self._discovery is None:
                    self._discovery = await discover(http, self.server_url, None)
                fresh = await request_token(
                    http, self._discovery, client, grant, key=self._key(), previous=token
                )
        except OAuthFlowError as exc:
            logger.info("refreshing the token failed (%s): authorizing again", exc)
            await self.storage.set_tokens(None)
            return None
        await self.storage.set_tokens(fresh)
        return fresh

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        """The client for the authorization server's requests: the caller's, else one of our own, which
        follows no redirect (a token request redirected elsewhere would carry the client's secret there;
        a redirected metadata URL counts as absent)."""
        if self._oauth_client is not None:
            yield self._oauth_client
            return
        timeout = httpx.Timeout(OAUTH_TIMEOUT)
        async with httpx.AsyncClient(
            timeout=timeout, follow_redirects=False, verify=shared_ssl_context()
        ) as http:
            yield http

    def _key(self) -> SigningKey | None:
        return None

    @abc.abstractmethod
    async def _grant(self, http: httpx.AsyncClient, discovery: Discovery, scope: str | None) -> OAuthToken:
        """One grant at the token endpoint of `discovery`, asking for `scope`; the token."""


def _require(module: str, why: str) -> None:
    """Import `module` now, so a missing auth extra is reported where the provider is made."""
    try:
        __import__(module)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"{why} needs the auth extra ({exc}); try: {install_hint('auth')}") from exc


def _sign(request: httpx.Request, token: OAuthToken | None) -> None:
    if token is not None:
        request.headers["Authorization"] = f"Bearer {token.access_token}"


class OAuthClientProvider(OAuthFlow):
    """The authorization code grant with PKCE, for `connect(url, auth=OAuthClientProvider(...))`.

    `server_url` is the MCP endpoint; `redirect_uri` where the authorization server sends the user back;
    `redirect_handler(url)` sends the user to the authorization URL and `callback_handler()` returns the
    `(code, state)` of the redirect (the state is checked). The client is, in this order: the one in
    `storage`, `client_id`/`client_secret` (pre-registered), `client_metadata_url` when the server
    supports client ID metadata documents, else registered dynamically with `client_metadata` (name,
    grant types...; the redirect URI and authentication method are filled in). `scope` overrides the
    scope selection (the challenge's, else the resource's `scopes_supported`); `offline_access` is asked
    for when the server offers it, for a refresh token.
    """

    def __init__(
        self,
        server_url: str,
        *,
        redirect_uri: str,
        redirect_handler: RedirectHandler,
        callback_handler: CallbackHandler,
        storage: TokenStorage | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        client_metadata_url: str | None = None,
        client_metadata: Mapping[str, Any] | None = None,
        scope: str | None = None,
        max_step_ups: int = 2,
        oauth_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            server_url, storage=storage, scope=scope, max_step_ups=max_step_ups, oauth_client=oauth_client
        )
        _require("authlib", "OAuthClientProvider (PKCE)")
        self.redirect_uri = redirect_uri
        self.redirect_handler = redirect_handler
        self.callback_handler = callback_handler
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_metadata_url = client_metadata_url
        self.client_metadata = dict(client_metadata or {})

    def _offline(self) -> bool:
        return "refresh_token" in self.client_metadata.get("grant_types", ["refresh_token"])

    async def _grant(self, http: httpx.AsyncClient, discovery: Discovery, scope: str | None) -> OAuthToken:
        asm = discovery.server_metadata
        if asm is not None and "S256" not in (asm.get("code_challenge_methods_supported") or ()):
            raise OAuthFlowError(f"authorization server {discovery.issuer!r} does not support PKCE with S256")
        if not discovery.authorization_endpoint:
            raise OAuthFlowError(f"authorization server {discovery.issuer!r} has no authorization_endpoint")
        client = await self._client(http, discovery, scope)
        code, verifier = await self._authorize(discovery, client, scope)
        grant = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
        }
        return await request_token(http, discovery, client, grant)

    async def _authorize(
        self, discovery: Discovery, client: ClientInfo, scope: str | None
    ) -> tuple[str, str]:
        """Send the user to the authorization endpoint; the code and the PKCE verifier."""
        from authlib.common.security import generate_token  # noqa: PLC0415 - the auth extra
        from authlib.oauth2.rfc7636 import create_s256_code_challenge  # noqa: PLC0415

        verifier, state = generate_token(64), generate_token(32)
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": self.redirect_uri,
            "state": state,
            "code_challenge": create_s256_code_challenge(verifier),
            "code_challenge_method": "S256",
            "resource": discovery.resource,
        }
        if scope:
            params["scope"] = scope
        endpoint = discovery.authorization_endpoint
        await self.redirect_handler(endpoint + ("&" if "?" in endpoint else "?") + urlencode(params))
        code, returned = await self.callback_handler()
        if returned != state:
            raise OAuthFlowError("the authorization redirect carried another state: refusing its code")
        if not code:
            raise OAuthFlowError("the authorization redirect carried no code")
        return code, verifier

    async def _client(self, http: httpx.AsyncClient, discovery: Discovery, scope: str | None) -> ClientInfo:
        stored = await self.storage.get_client_info()
        if stored is not None and stored.issuer in (None, discovery.issuer):
            return stored
        asm = discovery.server_metadata or {}
        if self.client_id is not None:
            method = choose_auth_method(discovery, has_secret=self.client_secret is not None)
            info = ClientInfo(self.client_id, self.client_secret, method, discovery.issuer)
        elif (
            self.client_metadata_url is not None and asm.get("client_id_metadata_document_supported") is True
        ):
            info = ClientInfo(self.client_metadata_url, None, "none", discovery.issuer)
        else:
            info = await register(http, discovery, self._registration(discovery, scope))
        await self.storage.set_client_info(info)
        return info

    def _registration(self, discovery: Discovery, scope: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "client_name": "mcpframe",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": choose_auth_method(discovery, has_secret=True),
        }
        if scope:
            metadata["scope"] = scope
        metadata.update(self.client_metadata)
        metadata["redirect_uris"] = [self.redirect_uri]
        return metadata


class ClientCredentialsProvider(OAuthFlow):
    """The client credentials grant, for a client acting on its own behalf (no user, no redirect).

    The client authenticates with `client_secret` (`client_secret_basic`, or `client_secret_post` when the
    server supports only that) or with `private_key` (`SigningKey`: a PEM and its algorithm) as
    `private_key_jwt` (RFC 7523). When the token expires, a new one is requested.
    """

    def __init__(
        self,
        server_url: str,
        *,
        client_id: str,
        client_secret: str | None = None,
        private_key: SigningKey | None = None,
        storage: TokenStorage | None = None,
        scope: str | None = None,
        max_step_ups: int = 2,
        oauth_client: httpx.AsyncClient | None = None,
    ) -> None:
        if (client_secret is None) == (private_key is None):
            raise ValueError("ClientCredentialsProvider needs exactly one of client_secret= and private_key=")
        super().__init__(
            server_url, storage=storage, scope=scope, max_step_ups=max_step_ups, oauth_client=oauth_client
        )
        if private_key is not None:
            _require("jwt", "private_key_jwt")
        self.client_id = client_id
        self.client_secret = client_secret
        self.private_key = private_key

    _renews_alone = True

    def _key(self) -> SigningKey | None:
        return self.private_key

    async def _grant(self, http: httpx.AsyncClient, discovery: Discovery, scope: str | None) -> OAuthToken:
        method = choose_auth_method(
            discovery, has_secret=self.client_secret is not None, has_key=self.private_key is not None
        )
        client = ClientInfo(self.client_id, self.client_secret, method, discovery.issuer)
        await self.storage.set_client_info(client)
        grant = {"grant_type": "client_credentials", "scope": scope}
        return await request_token(http, discovery, client, grant, key=self.private_key)
