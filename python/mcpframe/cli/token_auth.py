"""`mcpframe serve --auth-token`: bearer auth with one fixed token (an `mcpframe.http` `BearerAuth`)."""

from __future__ import annotations

import dataclasses
import hmac

from mcpframe.http.security import AccessToken, ListeningBearerAuth

__all__ = ["StaticTokenAuth", "static_token_auth"]


@dataclasses.dataclass(frozen=True, slots=True)
class StaticTokenAuth(ListeningBearerAuth):
    """Bearer auth with one fixed token; its resource metadata names the URL actually listened on."""


def static_token_auth(token: str, resource: str) -> StaticTokenAuth:
    """Auth that accepts exactly `token`, compared in constant time."""
    expected = token.encode()

    async def verify(presented: str) -> AccessToken | None:
        if hmac.compare_digest(presented.encode(), expected):
            return AccessToken(subject="mcpframe-serve")
        return None

    return StaticTokenAuth(verify, resource, [])
