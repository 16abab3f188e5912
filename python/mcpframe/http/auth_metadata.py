"""Discovery for the OAuth client: what a 401 says, where the metadata documents are, which scope to ask.

Pure functions, no I/O, so each rule of the MCP authorization specification (2025-11-25) is tested alone:

- `parse_challenge`: the `Bearer` challenge of a `WWW-Authenticate` header (RFC 6750 section 3);
- `resource_metadata_urls`: where the protected resource metadata (RFC 9728) may be, in the order the
  specification gives: the challenge's `resource_metadata`, then the well-known URI with the endpoint's
  path, then without it;
- `server_metadata_urls`: where an authorization server's metadata may be (RFC 8414 and OpenID Connect
  Discovery, with the path inserted or appended as the specification lists them);
- `resource_covers`: whether the resource a server names may be used for its URL (RFC 8707);
- `select_scope`: the scope of an authorization request (the challenge's, else `scopes_supported`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "canonical_resource",
    "parse_challenge",
    "resource_covers",
    "resource_metadata_urls",
    "select_scope",
    "server_metadata_urls",
    "union_scope",
]

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"

# auth-param = token BWS "=" BWS ( token / quoted-string ); the quoted string may escape with a backslash
_PARAM = re.compile(r'([A-Za-z0-9_!#$%&\'*+.^`|~-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)')
_BEARER = re.compile(r"(?:^|,)\s*bearer(?=\s|,|$)", re.IGNORECASE)
_GAP = re.compile(r"[\s,]*")


def parse_challenge(header: str | None) -> dict[str, str]:
    """The parameters of the `Bearer` challenge in `header` (lower-cased names, unquoted values).

    Other schemes' challenges in the same header are skipped; no Bearer challenge gives `{}`.
    """
    start = _BEARER.search(header or "")
    if header is None or start is None:
        return {}
    params: dict[str, str] = {}
    pos = start.end()
    for match in _PARAM.finditer(header, pos):
        if not _GAP.fullmatch(header, pos, match.start()):
            break  # a bare token between parameters: the next scheme's challenge starts here
        name, value = match.group(1), match.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params.setdefault(name.lower(), value)
        pos = match.end()
    return params


def _origin(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc, parts.path.rstrip("/")


def resource_metadata_urls(server_url: str, challenged: str | None) -> list[str]:
    """The URLs to try for the protected resource metadata of the MCP endpoint `server_url`, in order."""
    scheme, netloc, path = _origin(server_url)
    urls = [challenged] if challenged else []
    if path:
        urls.append(urlunsplit((scheme, netloc, PRM_WELL_KNOWN + path, "", "")))
    urls.append(urlunsplit((scheme, netloc, PRM_WELL_KNOWN, "", "")))
    return list(dict.fromkeys(urls))


def server_metadata_urls(issuer: str) -> list[str]:
    """The URLs to try for the metadata of the authorization server `issuer`, in the specification's order.

    With a path (`https://as.example/tenant1`): the OAuth well-known URI with the path inserted, the OpenID
    one with the path inserted, then the OpenID one appended to the path. Without one: the OAuth and the
    OpenID well-known URIs at the root.
    """
    scheme, netloc, path = _origin(issuer)
    if not path:
        paths = [OAUTH_WELL_KNOWN, OIDC_WELL_KNOWN]
    else:
        paths = [OAUTH_WELL_KNOWN + path, OIDC_WELL_KNOWN + path, path + OIDC_WELL_KNOWN]
    return [urlunsplit((scheme, netloc, p, "", "")) for p in paths]


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707, the specification's resource parameter): scheme and
    host lower-cased, no fragment, no query, no trailing slash after a path."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") if parts.path not in ("", "/") else ""
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether the protected resource `resource` (from its metadata) may stand for `server_url`: same
    scheme and authority, and `server_url`'s path lies under the resource's path."""
    want, have = urlsplit(canonical_resource(resource)), urlsplit(canonical_resource(server_url))
    if (want.scheme, want.netloc) != (have.scheme, have.netloc):
        return False
    base = want.path.rstrip("/")
    return not base or have.path == base or have.path.startswith(base + "/")


def _scopes(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, Sequence):
        return [s for s in value if isinstance(s, str)]
    return []


def select_scope(
    challenge: Mapping[str, str],
    resource_metadata: Mapping[str, Any] | None,
    server_metadata: Mapping[str, Any] | None,
    *,
    offline: bool = False,
) -> str | None:
    """The scope to request: the challenge's `scope`, else every scope of the resource's
    `scopes_supported`, else none (the parameter is omitted). With `offline`, `offline_access` is added
    when the authorization server lists it (the client wants a refresh token), and only then."""
    scopes = _scopes(challenge.get("scope"))
    if not scopes and resource_metadata is not None:
        scopes = _scopes(resource_metadata.get("scopes_supported"))
    supported = _scopes(server_metadata.get("scopes_supported")) if server_metadata else []
    if offline and scopes and "offline_access" in supported and "offline_access" not in scopes:
        scopes.append("offline_access")
    return " ".join(scopes) or None


def union_scope(previous: str | None, new: str | None) -> str | None:
    """Both scopes, each scope once, the previous ones first (a step-up keeps what was granted)."""
    merged = list(dict.fromkeys((previous or "").split() + (new or "").split()))
    return " ".join(merged) or None
