"""`mcpframe serve --auth-token`: bearer auth with one fixed token (an `mcpframe.http` `BearerAuth`)."""

from __future__ import annotations

import dataclasses
import hmac
from typing import Any

from mcpframe.http.security import AccessToken, BearerAuth

__all__ = ["StaticTokenAuth", "static_token_auth"]


@dataclasses.dataclass(frozen=True, slots=True)
class StaticTokenAuth(BearerAuth):
    """Bearer auth with one fixed token; its resource metadata names the URL actually listened on."""

    listening: list[str] = dataclasses.field(default_factory=list)
    """The endpoint's URL once bound (`--port 0` picks the port only then)."""

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata, naming the bound endpoint (no authorization server)."""
        doc = BearerAuth.metadata(self)
        if self.listening:
            doc["resource"] = self.listening[-1]
        return doc


def static_token_auth(token: str, resource: str) -> StaticTokenAuth:
    """Auth that accepts exactly `token`, compared in constant time."""
    expected = token.encode()

    async def verify(presented: str) -> AccessToken | None:
        if hmac.compare_digest(presented.encode(), expected):
            return AccessToken(subject="mcpframe-serve")
        return None

    return StaticTokenAuth(verify, resource, [])
