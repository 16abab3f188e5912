"""Where HTTP sessions live: in this process (the default), or in a shared store several instances read.

The default keeps every handshake-era session in the process that created it (`SessionManager.sessions`)
and its SSE events in a `MemoryEventStore`: nothing here runs on that path. A `SharedStore` (the Redis one,
`redis_store.RedisStore`, chosen with `HttpOptions(store="redis://...")`) makes the session registry and the
event store common to every instance behind a balancer:

- what a handshake gave a connection (`SessionState`) is written when it changes and read by any instance
  that gets a request of the session, which rebuilds the session from it;
- the standalone GET stream of a session is one stream in the store: any instance appends to it, the one
  holding the client's GET reads it (`tail`), and a client resumes it anywhere with `Last-Event-ID`;
- a `notifications/cancelled` for a request running elsewhere, and a client's answer to a request another
  instance sent it, are published for the instance concerned;
- a legacy SSE session (2024-11-05) is registered while its GET lives, and a POST for it that lands on
  another instance is relayed to the one holding it (`legacy_shared`);
- each instance says it is alive (a key it refreshes), claims the GET streams it holds (a second GET
  anywhere gets 409) and names itself in the POST streams it writes, so that a stream whose instance died
  is ended by the instance a client resumes it on.

A store that does not answer raises `StoreUnavailable`; the server answers that request with 503.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mcpframe._extras import install_hint

from .events import EventStore

if TYPE_CHECKING:
    from mcpframe.server import ServerConnection

    from .pipe import Pipe

__all__ = ["GET_STREAM", "SessionState", "SharedStore", "StoreUnavailable", "open_store"]

GET_STREAM = "get"
"""The id of a shared session's standalone GET stream: the same on every instance (a POST stream's id is a
random 16-character token, so the two never clash)."""


class StoreUnavailable(Exception):
    """The shared store did not answer in time (or refused): the request is answered with 503. `late`: it
    did not answer in time (it may yet), rather than failing outright (refused, authentication, DNS)."""

    def __init__(self, *args: object, late: bool = False) -> None:
        super().__init__(*args)
        self.late = late


@dataclasses.dataclass(frozen=True, slots=True)
class SessionState:
    """What a handshake-era session holds beyond its requests: enough to rebuild it on another instance."""

    owner: str | None
    version: str | None
    client_capabilities: dict[str, Any]
    client_info: Any
    log_level: int
    subscriptions: frozenset[str]

    @classmethod
    def of(cls, connection: ServerConnection, owner: str | None) -> SessionState:
        """The state of a live connection."""
        return cls(
            owner,
            connection.version,
            connection.client_capabilities,
            connection.client_info,
            connection.log_level,
            frozenset(connection.subscriptions),
        )

    def apply(self, connection: ServerConnection) -> None:
        """Make `connection` what the session's handshake made of it on the instance that served it."""
        connection.version = self.version
        connection.initialized = self.version is not None  # requests after initialize imply `initialized`
        connection.client_capabilities = self.client_capabilities  # the same object: `changed` compares ids
        connection.client_info = self.client_info
        connection.log_level = self.log_level
        connection.subscriptions = set(self.subscriptions)

    def changed(self, connection: ServerConnection) -> bool:
        """Whether the connection's handlers changed what this state recorded (cheap: no copy)."""
        return (
            connection.version != self.version
            or connection.log_level != self.log_level
            or connection.subscriptions != self.subscriptions
            or connection.client_capabilities is not self.client_capabilities
        )

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {
            "owner": self.owner,
            "version": self.version,
            "caps": self.client_capabilities,
            "info": self.client_info,
            "level": self.log_level,
            "subs": sorted(self.subscriptions),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SessionState:
        """Read the stored form back."""
        caps = doc.get("caps")
        return cls(
            doc.get("owner"),
            doc.get("version"),
            caps if isinstance(caps, dict) else {},
            doc.get("info"),
            int(doc.get("level", 0)),
            frozenset(doc.get("subs") or ()),
        )


@runtime_checkable
class SharedStore(EventStore, Protocol):
    """A session registry and event store shared by several instances (see the module's docstring)."""

    idle_timeout: float | None
    timeout: float  # the bound of one call, in seconds
    instance: str  # this instance's id in the store
    liveness: float  # seconds its liveness key and GET claims outlive their last refresh

    async def start(self, deliver: Callable[[str, bytes], None]) -> Callable[[], Coroutine[Any, Any, None]]:
        """Connect; `deliver(session_id, frame)` gets the frames other instances publish (`publish`).
        Returns the coroutine function that listens for them (run it in a task until cancelled)."""
        ...

    async def aclose(self) -> None:
        """Disconnect."""
        ...

    async def ping(self) -> None:
        """Check that the store answers (`StoreUnavailable` when not)."""
        ...

    async def save(self, session_id: str, state: SessionState) -> None:
        """Record the session's state (and refresh its time to live)."""
        ...

    async def load(self, session_id: str) -> SessionState | None:
        """The session's state, its time to live refreshed; `None` for an unknown, expired or deleted one."""
        ...

    async def delete(self, session_id: str) -> None:
        """Remove the session everywhere: its state, its events; a GET stream reading it ends."""
        ...

    async def publish(self, session_id: str, frame: bytes) -> None:
        """Hand a client's frame (a cancel, an answer) to the instance running the request it is about."""
        ...

    async def tail(self, session_id: str, stream_id: str, after: int, pipe: Pipe) -> None:
        """Copy the stream's events after sequence `after` into `pipe` as SSE events, then wait for more,
        until the stream ends, the session is deleted or the pipe is closed (its reader left)."""
        ...

    async def end_stream(self, session_id: str, stream_id: str) -> None:
        """Mark a stream ended (an instance tailing it ends its response there)."""
        ...

    async def refresh(self, claims: dict[str, str]) -> set[str]:
        """Say this instance is alive and refresh its GET claims (`session -> token`); the ones lost."""
        ...

    async def retire(self, claims: dict[str, str]) -> None:
        """This instance stops: no longer alive, its GET claims released."""
        ...

    async def claim_get(self, session_id: str, token: str, *, take: bool) -> bool:
        """Claim the session's GET stream (`take`: from any other holder); `False` when another holds it."""
        ...

    async def release_get(self, session_id: str, token: str) -> None:
        """Release the claim if it is still `token`."""
        ...

    def describe(self, stream_id: str, request_ids: list[Any]) -> None:
        """This instance answers the POST stream's requests (recorded with its first stored event)."""
        ...

    def undescribe(self, stream_id: str) -> bytes | None:
        """Forget what `describe` recorded, if it was not stored."""
        ...

    async def hold_legacy(self, session_id: str, owner: str | None, ttl: float) -> None:
        """Register (or refresh) a legacy SSE session held by this instance, for `ttl` seconds."""
        ...

    async def release_legacy(self, session_id: str) -> None:
        """The legacy session's stream ended: forget it everywhere."""
        ...

    async def legacy_owner(self, session_id: str) -> tuple[str | None] | None:
        """`(owner,)` of a legacy session some instance holds, `None` when none does."""
        ...

    async def relay_legacy(self, session_id: str, message: bytes, wait: float) -> bytes | None:
        """Publish a body for the legacy session's holder and wait up to `wait` seconds for its answer."""
        ...

    async def ack_legacy(self, nonce: str, status: bytes) -> None:
        """The holder's answer to the relayed body `nonce` names."""
        ...


def open_store(
    url: str, *, idle_timeout: float | None, timeout: float, liveness: float = 15.0
) -> SharedStore:
    """The shared store a URL names (`redis://host:port/db`, `rediss://`, `unix://`)."""
    scheme = url.partition("://")[0].lower()
    if scheme not in ("redis", "rediss", "unix"):
        raise ValueError(
            f"store: unsupported URL scheme {scheme!r} in {url!r} (expected redis://host:port/db)"
        )
    try:
        from .redis_store import RedisStore  # noqa: PLC0415 - the redis extra, only when asked for
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"store {_where(url)} needs the redis extra ({exc}); try: {install_hint('redis')}", name=exc.name
        ) from exc

    return RedisStore(url, idle_timeout=idle_timeout, timeout=timeout, liveness=liveness)


def _where(url: str) -> str:
    """The URL without its user, password and query (`?password=` is one), for messages."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"  # unix:///x keeps its slashes
