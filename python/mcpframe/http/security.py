"""Who may talk to the endpoint: Host and Origin allow-lists (DNS rebinding) and bearer tokens.

Allow-list entries are `host` (any port) or `host:port`; `*` allows everything. Origins are matched on
`scheme://host[:port]` the same way (`http://localhost` allows every port of it).

A request whose target is in absolute-form (`POST http://host:port/mcp HTTP/1.1`) is checked on the
target's authority, not on its `Host` header: RFC 9112 §3.2.2 has an origin server ignore the received
`Host` then (`target_host`), so a client could otherwise name one host to the guard and another to the URI.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "LOOPBACK_HOSTS",
    "AccessToken",
    "AllowedPairs",
    "BearerAuth",
    "HostGuard",
    "ListeningBearerAuth",
    "TokenVerifier",
    "loopback_origins",
    "target_host",
]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def loopback_origins() -> tuple[str, ...]:
    """The origins of pages served from this machine, on any port."""
    return tuple(f"{scheme}://{host}" for scheme in ("http", "https") for host in LOOPBACK_HOSTS)


def _split_port(value: str) -> tuple[str, str | None]:
    """`host[:port]` -> (host, port); IPv6 literals keep their brackets."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        rest = value[end + 1 :]
        return value[: end + 1], rest[1:] if rest.startswith(":") else None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        return value, None
    return host, port


def _matches(value: str, allowed: frozenset[str]) -> bool:
    if "*" in allowed or value in allowed:
        return True
    base, port = _split_port(value)
    return port is not None and base in allowed


def target_host(target: bytes, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The request's (lower-case) header lines as its Host guard must read them: for an absolute-form
    `target` (`http://host[:port]/path`, RFC 9112 §3.2.2) the received `host` lines give way to one naming
    the target's authority (without any `user@`); for any other target, `headers` itself."""
    if target[:1] == b"/" or b"://" not in target:
        return headers  # origin-form (`/mcp`), `*`, or no URL at all (the server refuses that itself)
    rest = target.partition(b"://")[2]
    end = min((i for i in map(rest.find, (b"/", b"?", b"#")) if i >= 0), default=len(rest))
    authority = rest[:end].rpartition(b"@")[2]
    return [(b"host", authority), *((name, value) for name, value in headers if name != b"host")]


@dataclasses.dataclass(frozen=True, slots=True)
class HostGuard:
    """Reject requests whose `Host` or `Origin` is not allowed (DNS-rebinding protection)."""

    hosts: frozenset[str]
    origins: frozenset[str]

    @classmethod
    def create(cls, hosts: Iterable[str] | None = None, origins: Iterable[str] | None = None) -> HostGuard:
        """Loopback hosts and origins unless given."""
        return cls(
            frozenset(h.lower() for h in (LOOPBACK_HOSTS if hosts is None else hosts)),
            frozenset(o.lower().rstrip("/") for o in (loopback_origins() if origins is None else origins)),
        )

    def check(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """`None` when allowed, else `(status, reason)`: 421 for a foreign Host, 403 for a foreign Origin."""
        return _check(self, host, origin)

    def _check(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        if host is None or not _matches(host.lower(), self.hosts):
            return 421, f"Misdirected Request: host {host!r} is not allowed"
        if origin is not None and not _matches(origin.lower().rstrip("/"), self.origins):
            return 403, f"Forbidden: origin {origin!r} is not allowed"
        return None


@functools.lru_cache(maxsize=512)
def _check(guard: HostGuard, host: str | None, origin: str | None) -> tuple[int, str] | None:
    """`HostGuard.check`, remembered: clients send the same Host and Origin with every request."""
    return guard._check(host, origin)


Pair = tuple[str | None, str | None]
"""A request's (Host, Origin) header values, `None` where the header is absent."""


class AllowedPairs(set[Pair]):
    """The (Host, Origin) pairs `guard` allowed, for the lean server's hot path (`wire_fast`): the caller
    looks its pair up itself (`pair in allowed`, a set lookup with no Python call) and asks `admit` only on
    a miss. At most `bound` pairs are remembered, so a client naming ever new hosts cannot grow it: past
    that, each new pair is checked every time (`HostGuard.check`, itself cached)."""

    __slots__ = ("bound", "guard")

    def __init__(self, guard: HostGuard, bound: int = 256) -> None:
        super().__init__()
        self.guard = guard
        self.bound = bound

    def admit(self, pair: Pair) -> bool:
        """Whether `guard` allows `pair`; an allowed pair is remembered while there is room."""
        if self.guard.check(*pair) is not None:
            return False
        if len(self) < self.bound:
            self.add(pair)
        return True


@dataclasses.dataclass(frozen=True, slots=True)
class AccessToken:
    """What a verifier knows about a valid token."""

    subject: str | None = None
    scopes: frozenset[str] = frozenset()
    claims: dict[str, Any] = dataclasses.field(default_factory=dict)


TokenVerifier = Callable[[str], Awaitable[AccessToken | None]]
"""`await verify(token)`: the token's facts, or `None` when it is not valid."""


@dataclasses.dataclass(frozen=True, slots=True)
class BearerAuth:
    """OAuth 2.1 resource-server side: a verifier plus the protected resource metadata (RFC 9728).

    `resource` is the canonical URL of the MCP endpoint; its metadata is served at
    `/.well-known/oauth-protected-resource<endpoint path>` and named in every 401 challenge.
    """

    verify: TokenVerifier
    resource: str
    authorization_servers: Sequence[str]
    scopes: Sequence[str] = ()
    resource_name: str | None = None

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata document."""
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes:
            doc["scopes_supported"] = list(self.scopes)
        if self.resource_name is not None:
            doc["resource_name"] = self.resource_name
        return doc

    def challenge(self, metadata_url: str, error: str | None = None, description: str | None = None) -> str:
        """The `WWW-Authenticate` value of a 401 (or of a 403 `insufficient_scope`)."""
        parts = [f'resource_metadata="{metadata_url}"']
        if error is not None:
            parts.insert(0, f'error="{error}"')
        if description is not None:
            parts.append(f'error_description="{description}"')
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        return "Bearer " + ", ".join(parts)

    async def authenticate(self, authorization: str | None) -> AccessToken | None:
        """The token's facts for an `Authorization: Bearer ...` header, `None` when missing or invalid.

        Scopes are not checked here: a valid token without the required scopes is a 403, not a 401.
        """
        if authorization is None:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        return await self.verify(token)

    def missing_scopes(self, token: AccessToken) -> set[str]:
        """The required scopes the token lacks (a 403 `insufficient_scope` when not empty)."""
        return set(self.scopes) - token.scopes


@dataclasses.dataclass(frozen=True, slots=True)
class ListeningBearerAuth(BearerAuth):
    """A `BearerAuth` whose resource metadata names the endpoint's URL once bound (`--port 0` picks the
    port only then; `mcpframe serve` appends it to `listening`), and `resource` before."""

    listening: list[str] = dataclasses.field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata, naming the bound endpoint."""
        doc = BearerAuth.metadata(self)
        if self.listening:
            doc["resource"] = self.listening[-1]
        return doc
