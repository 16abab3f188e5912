"""The OAuth side of the conformance client: which `httpx.Auth` a scenario of the harness gets.

The harness's authorization endpoint redirects at once (no user), so the redirect handler follows it
headlessly: it GETs the authorization URL without following the redirect and reads `code` and `state` from
its `Location`, which the callback handler then returns. Credentials the scenario gives come in
`MCP_CONFORMANCE_CONTEXT` (JSON): `client_id` and `client_secret` (pre-registered), `private_key_pem` and
`signing_algorithm` (`private_key_jwt`), `idp_*` (the identity provider of enterprise-managed
authorization, SEP-990). The client ID metadata document URL is the one the harness
expects when the authorization server supports them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from mcpframe.http.auth import ClientCredentialsProvider, OAuthClientProvider, OAuthFlowError, SigningKey
from mcpframe.http.auth_identity import IdentityAssertionProvider

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3030/callback"


class HeadlessRedirect:
    """Follows the authorization server's immediate redirect and keeps its code and state."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self._http = http
        self._found: tuple[str, str | None] | None = None

    async def redirect(self, url: str) -> None:
        """`redirect_handler`: GET the authorization URL and read the redirect's query."""
        response = await self._http.get(url, follow_redirects=False)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise OAuthFlowError(
                f"the authorization endpoint answered HTTP {response.status_code}, no redirect"
            )
        query = parse_qs(urlsplit(location).query)
        self._found = (query.get("code", [""])[0], query.get("state", [None])[0])

    async def callback(self) -> tuple[str, str | None]:
        """`callback_handler`: what the redirect carried."""
        found, self._found = self._found, None
        if found is None:
            raise OAuthFlowError("no authorization redirect was followed")
        return found


def _context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    context = json.loads(raw) if raw else {}
    return context if isinstance(context, dict) else {}


@contextlib.asynccontextmanager
async def auth_for(scenario: str, url: str) -> AsyncIterator[httpx.Auth | None]:
    """The provider for `scenario` against the MCP endpoint `url` (None: not an auth scenario)."""
    if not scenario.startswith("auth/"):
        yield None
        return
    context = _context()
    if scenario == "auth/cross-app-access-complete-flow":
        yield IdentityAssertionProvider(
            url,
            idp_token_endpoint=context["idp_token_endpoint"],
            id_token=context["idp_id_token"],
            idp_client_id=context["idp_client_id"],
            client_id=context["client_id"],
            client_secret=context["client_secret"],
        )
        return
    if scenario.startswith("auth/client-credentials"):
        key = None
        if "private_key_pem" in context:
            key = SigningKey(context["private_key_pem"], context.get("signing_algorithm", "ES256"))
        yield ClientCredentialsProvider(
            url, client_id=context["client_id"], client_secret=context.get("client_secret"), private_key=key
        )
        return
    async with httpx.AsyncClient() as http:
        headless = HeadlessRedirect(http)
        yield OAuthClientProvider(
            url,
            redirect_uri=REDIRECT_URI,
            redirect_handler=headless.redirect,
            callback_handler=headless.callback,
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            client_metadata_url=CLIENT_METADATA_URL,
            client_metadata={"client_name": "mcpframe-conformance-client"},
        )
