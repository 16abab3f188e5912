"""The OAuth client's requests to the metadata, registration and token endpoints.

`discover` finds the protected resource metadata (RFC 9728) and the authorization server's metadata (RFC
8414 / OpenID Connect Discovery) of an MCP server, falling back, for servers of the 2025-03-26 revision
that publish no resource metadata, to the server's own origin and then to its `/authorize`, `/token` and
`/register` paths. `register` is dynamic client registration (RFC 7591); `request_token` posts a grant
with the client authentication its `ClientInfo` names (`client_secret_basic`, `client_secret_post`,
`none`, `private_key_jwt` per RFC 7523, the assertion signed with PyJWT).

Every failure is an `OAuthFlowError` saying which endpoint answered what.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from .auth_metadata import canonical_resource, resource_covers, resource_metadata_urls, server_metadata_urls
from .auth_storage import ClientInfo, OAuthToken

__all__ = [
    "AUTH_METHODS",
    "Discovery",
    "OAuthFlowError",
    "choose_auth_method",
    "discover",
    "register",
    "request_token",
]

AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
"""The token endpoint authentication methods the client implements."""

JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_LIFETIME = 300  # seconds a private_key_jwt client assertion stays valid
MAX_DOCUMENT = 1 << 20  # bytes: a metadata or token document larger than this is refused


class OAuthFlowError(httpx.HTTPError):
    """Authorization could not be completed: discovery found nothing usable, an endpoint refused, the
    state of the redirect did not match. The request that needed the token fails with it."""


@dataclasses.dataclass(frozen=True, slots=True)
class Discovery:
    """What discovery found for one MCP server: the resource to name in requests (RFC 8707), the
    authorization server and its endpoints, and both metadata documents (None when absent)."""

    resource: str
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    resource_metadata: dict[str, Any] | None
    server_metadata: dict[str, Any] | None


async def _document(http: httpx.AsyncClient, url: str) -> dict[str, Any] | None:
    """The JSON object at `url`, or None when it answers anything but 200 with one (the next URL is
    tried); a network failure is the caller's."""
    response = await http.get(url, headers={"accept": "application/json"})
    if response.status_code != 200 or len(response.content) > MAX_DOCUMENT:
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _same_issuer(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


async def discover(http: httpx.AsyncClient, server_url: str, challenged: str | None) -> Discovery:
    """Find the authorization server of the MCP endpoint `server_url` (`challenged`: the
    `resource_metadata` URL its 401 named, if any)."""
    prm = None
    for url in resource_metadata_urls(server_url, challenged):
        prm = await _document(http, url)
        if prm is not None:
            break
    if prm is not None:
        resource = prm.get("resource")
        if isinstance(resource, str) and not resource_covers(resource, server_url):
            raise OAuthFlowError(
                f"the protected resource metadata names resource {resource!r}, which does not cover "
                f"{server_url!r}: refusing to authorize for it (RFC 8707)"
            )
        servers = prm.get("authorization_servers")
        if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
            raise OAuthFlowError(
                f"the protected resource metadata of {server_url!r} names no authorization server"
            )
        issuer, named = servers[0], resource if isinstance(resource, str) else canonical_resource(server_url)
    else:  # 2025-03-26: no resource metadata; the authorization server is the MCP server's origin
        parts = urlsplit(server_url)
        issuer, named = urlunsplit((parts.scheme, parts.netloc, "", "", "")), canonical_resource(server_url)
    asm = None
    for url in server_metadata_urls(issuer):
        asm = await _document(http, url)
        if asm is not None:
            break
    return _endpoints(named, issuer, prm, asm)


def _endpoints(
    resource: str, issuer: str, prm: dict[str, Any] | None, asm: dict[str, Any] | None
) -> Discovery:
    if asm is None:  # 2025-03-26's fallback: the default paths at the authorization server's root
        base = issuer.rstrip("/")
        return Discovery(
            resource, issuer, f"{base}/authorize", f"{base}/token", f"{base}/register", prm, None
        )
    stated = asm.get("issuer")
    if prm is not None and isinstance(stated, str) and not _same_issuer(stated, issuer):
        raise OAuthFlowError(
            f"the metadata of authorization server {issuer!r} names issuer {stated!r} (RFC 8414)"
        )
    authorize, token = asm.get("authorization_endpoint"), asm.get("token_endpoint")
    if not isinstance(token, str):
        raise OAuthFlowError(f"the metadata of authorization server {issuer!r} has no token_endpoint")
    registration = asm.get("registration_endpoint")
    return Discovery(
        resource,
        issuer,
        authorize if isinstance(authorize, str) else "",
        token,
        registration if isinstance(registration, str) else None,
        prm,
        asm,
    )


def choose_auth_method(discovery: Discovery, *, has_secret: bool, has_key: bool = False) -> str:
    """How to authenticate at the token endpoint: the first the server supports of private_key_jwt (with
    a key), client_secret_basic, client_secret_post (with a secret), else none. RFC 8414's default
    when the server lists nothing is client_secret_basic."""
    asm = discovery.server_metadata or {}
    supported = asm.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    wanted = (["private_key_jwt"] if has_key else []) + (
        ["client_secret_basic", "client_secret_post"] if has_secret else []
    )
    for method in wanted:
        if method in supported:
            return method
    return "none" if not has_key else "private_key_jwt"


async def register(http: httpx.AsyncClient, discovery: Discovery, metadata: Mapping[str, Any]) -> ClientInfo:
    """Register the client (RFC 7591) with `metadata`; the answer's id, secret and method."""
    endpoint = discovery.registration_endpoint
    if endpoint is None:
        raise OAuthFlowError(
            f"authorization server {discovery.issuer!r} offers no dynamic client registration: "
            "pass client_id= (a pre-registered client) or client_metadata_url="
        )
    response = await http.post(endpoint, json=dict(metadata))
    body = _json_object(response)
    if response.status_code not in (200, 201) or not isinstance(body.get("client_id"), str):
        raise OAuthFlowError(f"client registration at {endpoint} failed: {_describe(response, body)}")
    secret = body.get("client_secret") if isinstance(body.get("client_secret"), str) else None
    method = body.get("token_endpoint_auth_method") or metadata.get("token_endpoint_auth_method")
    if method not in AUTH_METHODS or (method != "none" and secret is None and method != "private_key_jwt"):
        method = "client_secret_basic" if secret is not None else "none"
    uris = body.get("redirect_uris") or metadata.get("redirect_uris") or ()
    return ClientInfo(body["client_id"], secret, str(method), discovery.issuer, tuple(uris))


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        body = json.loads(response.content) if len(response.content) <= MAX_DOCUMENT else None
    except ValueError:
        body = None
    return body if isinstance(body, dict) else {}


def _describe(response: httpx.Response, body: Mapping[str, Any]) -> str:
    error = body.get("error")
    text = f"HTTP {response.status_code}"
    if isinstance(error, str):
        text += f" {error}"
        if isinstance(body.get("error_description"), str):
            text += f": {body['error_description']}"
    return text


@dataclasses.dataclass(frozen=True, slots=True)
class SigningKey:
    """A private key for `private_key_jwt` (PEM) and its JWS algorithm (e.g. `ES256`, `RS256`)."""

    pem: str
    algorithm: str = "RS256"
    audience: str | None = None  # the assertion's `aud`; None: the authorization server's issuer


def client_assertion(client_id: str, key: SigningKey, audience: str) -> str:
    """A signed JWT client assertion (RFC 7523 section 2.2): iss and sub the client, aud the server."""
    import jwt  # noqa: PLC0415 - optional (the auth extra), only for private_key_jwt

    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": key.audience or audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
        "jti": secrets.token_urlsafe(16),
    }
    return jwt.encode(claims, key.pem, algorithm=key.algorithm)


def _authenticate(
    client: ClientInfo, key: SigningKey | None, discovery: Discovery, data: dict[str, str]
) -> dict[str, str]:
    """Add the client's authentication to the form `data`; the headers it needs."""
    method = client.auth_method
    if method == "client_secret_basic" and client.client_secret is not None:
        # RFC 6749 section 2.3.1: each part form-urlencoded before joining with a colon
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        return {"authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}
    data["client_id"] = client.client_id
    if method == "client_secret_post" and client.client_secret is not None:
        data["client_secret"] = client.client_secret
    elif method == "private_key_jwt":
        if key is None:
            raise OAuthFlowError("private_key_jwt needs a signing key (private_key=)")
        data["client_assertion_type"] = JWT_BEARER_ASSERTION
        data["client_assertion"] = client_assertion(client.client_id, key, discovery.issuer)
    return {}


async def request_token(
    http: httpx.AsyncClient,
    discovery: Discovery,
    client: ClientInfo,
    grant: Mapping[str, str | None],
    *,
    key: SigningKey | None = None,
    previous: OAuthToken | None = None,
) -> OAuthToken:
    """Post `grant` (its None values left out, `resource` added) to the token endpoint; the token."""
    data = {name: value for name, value in grant.items() if value is not None}
    data.setdefault("resource", discovery.resource)
    headers = _authenticate(client, key, discovery, data)
    headers["accept"] = "application/json"
    response = await http.post(discovery.token_endpoint, data=data, headers=headers)
    body = _json_object(response)
    if response.status_code != 200:
        raise OAuthFlowError(
            f"the token endpoint {discovery.token_endpoint} refused the {data['grant_type']} grant: "
            f"{_describe(response, body)}"
        )
    try:
        token = OAuthToken.from_response(body, previous=previous)
    except ValueError as exc:
        raise OAuthFlowError(f"the token endpoint {discovery.token_endpoint}: {exc}") from None
    if token.token_type.lower() != "bearer":
        raise OAuthFlowError(
            f"the token endpoint issued a {token.token_type!r} token; only Bearer is supported"
        )
    return token
