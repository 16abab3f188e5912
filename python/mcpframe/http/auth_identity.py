"""Enterprise-managed authorization (SEP-990, the MCP `ext-auth` extension): no browser, the user's
identity provider vouches for them.

`IdentityAssertionProvider` trades the user's ID token at the identity provider for an identity assertion
authorization grant (ID-JAG: RFC 8693 token exchange, `requested_token_type` `...:id-jag`) naming the MCP
server's authorization server as audience and the MCP server as resource, then presents that grant at the
authorization server (RFC 7523 `jwt-bearer` grant), authenticating as its registered client.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import httpx

from .auth import OAuthFlow
from .auth_endpoints import Discovery, OAuthFlowError, choose_auth_method, request_token
from .auth_storage import ClientInfo, OAuthToken, TokenStorage

__all__ = ["IdentityAssertionProvider"]

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class IdentityAssertionProvider(OAuthFlow):
    """SEP-990: exchange the user's ID token (`id_token`: a string, or an async callable returning a fresh
    one) at `idp_token_endpoint` (as `idp_client_id`, with `idp_client_secret` when the IdP wants one) for
    an ID-JAG, and that for an access token at the MCP server's authorization server as `client_id` /
    `client_secret`."""

    def __init__(
        self,
        server_url: str,
        *,
        idp_token_endpoint: str,
        id_token: str | Callable[[], Awaitable[str]],
        idp_client_id: str,
        client_id: str,
        client_secret: str | None = None,
        idp_client_secret: str | None = None,
        storage: TokenStorage | None = None,
        scope: str | None = None,
        oauth_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(server_url, storage=storage, scope=scope, max_step_ups=2, oauth_client=oauth_client)
        self.idp_token_endpoint = idp_token_endpoint
        self.id_token = id_token
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret
        self.client_id = client_id
        self.client_secret = client_secret

    _renews_alone = True

    async def _grant(self, http: httpx.AsyncClient, discovery: Discovery, scope: str | None) -> OAuthToken:
        assertion = await self._exchange(http, discovery, scope)
        method = choose_auth_method(discovery, has_secret=self.client_secret is not None)
        client = ClientInfo(self.client_id, self.client_secret, method, discovery.issuer)
        await self.storage.set_client_info(client)
        grant = {"grant_type": JWT_BEARER, "assertion": assertion, "scope": scope}
        return await request_token(http, discovery, client, grant)

    async def _exchange(self, http: httpx.AsyncClient, discovery: Discovery, scope: str | None) -> str:
        """The ID-JAG for this authorization server and resource, from the identity provider."""
        subject = self.id_token if isinstance(self.id_token, str) else await self.id_token()
        data = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": subject,
            "subject_token_type": ID_TOKEN,
            "audience": discovery.issuer,
            "resource": discovery.resource,
            "client_id": self.idp_client_id,
        }
        if scope:
            data["scope"] = scope
        if self.idp_client_secret is not None:
            data["client_secret"] = self.idp_client_secret
        response = await http.post(self.idp_token_endpoint, data=data, headers={"accept": "application/json"})
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        if response.status_code != 200 or not isinstance(body, dict):
            error = body.get("error", "") if isinstance(body, dict) else ""
            raise OAuthFlowError(
                f"the identity provider's token exchange at {self.idp_token_endpoint} failed: "
                f"HTTP {response.status_code} {error}".rstrip()
            )
        token = body.get("access_token")
        if body.get("issued_token_type") != ID_JAG or not isinstance(token, str):
            raise OAuthFlowError("the identity provider's token exchange returned no ID-JAG")
        return token
