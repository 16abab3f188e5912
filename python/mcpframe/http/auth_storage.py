"""Where an OAuth client keeps what it learned: the tokens and the client registration.

`TokenStorage` is the seam: the providers of `mcpframe.http.auth` read and write through it, so an
application can keep tokens in a keyring or a file and skip the browser the next time it starts.
`InMemoryTokenStorage` (the default) forgets them when the process ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["ClientInfo", "InMemoryTokenStorage", "OAuthToken", "TokenStorage"]

EXPIRY_MARGIN = 30.0
"""Seconds before its stated expiry at which a token counts as expired (clock skew, time in flight)."""


@dataclasses.dataclass(frozen=True, slots=True)
class OAuthToken:
    """An access token as a token endpoint answered it (RFC 6749 section 5.1), plus when it expires.

    `expires_at` is a `time.time()` timestamp (None: the server gave no `expires_in`).
    """

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    scope: str | None = None
    expires_at: float | None = None

    @classmethod
    def from_response(cls, body: Mapping[str, Any], *, previous: OAuthToken | None = None) -> OAuthToken:
        """Read a token response; a refresh answer without a new refresh token keeps the old one."""
        access = body.get("access_token")
        if not isinstance(access, str) or not access:
            raise ValueError("the token response has no access_token")
        expires_at = None
        with contextlib.suppress(KeyError, TypeError, ValueError):  # a number, or a numeric string
            expires_at = time.time() + float(body["expires_in"])
        refresh = body.get("refresh_token")
        if not isinstance(refresh, str):
            refresh = previous.refresh_token if previous is not None else None
        scope = body.get("scope")
        return cls(
            access_token=access,
            token_type=str(body.get("token_type") or "Bearer"),
            refresh_token=refresh,
            scope=scope if isinstance(scope, str) else (previous.scope if previous else None),
            expires_at=expires_at,
        )

    def expired(self, now: float | None = None) -> bool:
        """True when the token is past (or within `EXPIRY_MARGIN` of) its expiry."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at - EXPIRY_MARGIN


@dataclasses.dataclass(frozen=True, slots=True)
class ClientInfo:
    """The client's identity at one authorization server: pre-registered, registered dynamically (RFC
    7591), or a client ID metadata document URL used as the id.

    `auth_method` is how the client authenticates at the token endpoint: `none`, `client_secret_basic`,
    `client_secret_post` or `private_key_jwt`. `issuer` names the authorization server it belongs to
    (None: any), so a registration is not offered to another server.
    """

    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    issuer: str | None = None
    redirect_uris: tuple[str, ...] = ()


class TokenStorage(Protocol):
    """Where a provider keeps tokens and its registration; every method may do I/O."""

    async def get_tokens(self) -> OAuthToken | None:
        """The stored token, if any."""
        ...

    async def set_tokens(self, tokens: OAuthToken | None) -> None:
        """Store `tokens` (None forgets them)."""
        ...

    async def get_client_info(self) -> ClientInfo | None:
        """The stored registration, if any."""
        ...

    async def set_client_info(self, info: ClientInfo | None) -> None:
        """Store the registration (None forgets it)."""
        ...


class InMemoryTokenStorage:
    """The default `TokenStorage`: attributes of this object, gone with the process."""

    def __init__(self, tokens: OAuthToken | None = None, client_info: ClientInfo | None = None) -> None:
        self.tokens = tokens
        self.client_info = client_info

    async def get_tokens(self) -> OAuthToken | None:
        """The stored token, if any."""
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken | None) -> None:
        """Keep `tokens`."""
        self.tokens = tokens

    async def get_client_info(self) -> ClientInfo | None:
        """The stored registration, if any."""
        return self.client_info

    async def set_client_info(self, info: ClientInfo | None) -> None:
        """Keep the registration."""
        self.client_info = info
