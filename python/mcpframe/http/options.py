"""Every knob of the Streamable HTTP host as a frozen value: `HttpOptions` (server), `HttpClientOptions`.

Its own module so that the pieces the server and the client are composed of (`PostHandler`, the session
manager, the SSE replies, the client's answer reader) can each take the options without importing what
builds them. A misspelt knob is a `TypeError` where the options are written.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Literal

from mcpframe.session import SessionOptions
from mcpframe.session.outbox import HIGH_WATER

from .events import EventStore, MemoryEventStore
from .pipe import SSE_HIGH_WATER
from .security import BearerAuth

__all__ = ["HttpClientOptions", "HttpOptions", "ResponseMode"]

ResponseMode = Literal["resumable", "auto", "sse"]
"""How a POST that carries requests is answered (see `HttpOptions.response_mode`)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HttpOptions:
    """Knobs of the HTTP server; the defaults suit a local server on loopback."""

    path: str = "/mcp"
    """The endpoint's path (POST, GET and DELETE); the resource metadata lives beside it (with `auth`)."""

    allowed_hosts: Sequence[str] | None = None
    """Accepted `Host` headers: `None` loopback hosts on any port, `["*"]` no check."""

    allowed_origins: Sequence[str] | None = None
    """Accepted `Origin` headers: `None` loopback origins on any port."""

    max_body: int = 4 * 1024 * 1024
    """Longest request body in bytes (413 past it); also the lanes' `max_frame` by default."""

    body_timeout: float | None = 30.0
    """Seconds a request body may take to come in whole once its head was read (408 past it, and the
    connection is closed): a client trickling its body in cannot hold a request forever. `None`: no bound."""

    head_timeout: float = 10.0
    """Seconds a request head may take to come in whole from its first byte (408 past it, and the
    connection is closed), with either HTTP server (`serve_http`): a slow-loris client cannot hold a
    connection forever. A connection that sends nothing is closed after the keep-alive (5 s)."""

    event_store: EventStore | None = dataclasses.field(default_factory=MemoryEventStore)
    """Where SSE events are kept for resumption (`None`: streams are not resumable)."""

    retry_ms: int = 1000
    """The `retry` of priming events: how long a client waits before resuming."""

    close_idle_streams: float | None = None
    """SSE polling: seconds after which a quiet resumable POST stream is closed (the client resumes it
    with GET + `Last-Event-ID`); `None`: kept open. Streams, unlike `idle_timeout`'s sessions."""

    response_mode: ResponseMode = "resumable"
    """`"auto"`: JSON unless a handler sends something before its response (or stays quiet `stream_after`);
    `"sse"`: always SSE when the client accepts it; `"resumable"`: SSE where the stream is primed and
    resumable (event store, client at 2025-11-25 or later), `"auto"` elsewhere. A client that accepts SSE
    and not JSON gets SSE in every mode."""

    stream_after: float = 1.0
    """Seconds a POST is held for a plain JSON answer before it switches to SSE."""

    keepalive: float = 15.0
    """Seconds between keep-alive comments on a quiet SSE stream."""

    idle_timeout: float | None = 1800.0
    """Sessions with no HTTP request for this long are closed (`None`: never)."""

    max_sessions: int = 10_000
    """HTTP sessions at once; past it `initialize` gets 503."""

    max_in_flight: int = 1024
    """Requests being answered at once, per server (every session and the stateless requests together);
    past it a POST waits, first come first served (see `http/admission.py`). The bound of the whole
    server: `SessionOptions.max_in_flight` (in `session_options`) bounds each lane's Session."""

    max_queued: int = 1024
    """POSTs that may wait for room; past it a POST gets 503 with `Retry-After`."""

    auth: BearerAuth | None = None
    """Bearer-token verification (and the protected resource metadata); `None`: no authentication."""

    legacy_sse: bool = True
    """Also serve the HTTP+SSE transport of 2024-11-05 beside `path`: GET `/sse` opens a session's stream,
    POST `/messages/?session_id=` carries its messages (`http/legacy.py`); `False`: both are 404."""

    store: str | None = None
    """Where handshake-era sessions and their SSE events live: `None` in this process (the default);
    `"redis://host:port/db"` in Redis, shared by every instance behind a balancer (the `redis` extra;
    `event_store` is then ignored: the events are in Redis too). See docs/scale-out.md."""

    store_timeout: float = 2.0
    """Seconds one call to the shared store may take; past it the request gets 503 naming the store."""

    store_liveness: float = 15.0
    """With a `store`: seconds an instance's liveness key, and the claims of the GET streams it holds,
    outlive its last refresh (a timer refreshes them every quarter of it, whatever the traffic). What a
    dead instance takes to be noticed: its POST streams resumed elsewhere end, its GET streams can be
    opened elsewhere. At least three times `store_timeout`, so a refresh always lands in time."""

    stateless: bool = False
    """Serve handshake-era clients without sessions too (as the official SDK's `stateless_http`): each
    POST is self-contained, `initialize` is answered and forgotten, no `Mcp-Session-Id`, GET and DELETE
    get 405. 2026-07-28 requests are stateless anyway."""

    session_options: SessionOptions | None = None
    """The tuning of the Sessions answering POSTs (`None`: their defaults); their `max_frame` is capped at
    `max_body`, since no frame can be longer than the body that carries it, and their outbox mark is the
    SSE pipe's 64 KiB unless set to another value than the Session's 1 MiB (`lane_options`)."""

    def __post_init__(self) -> None:
        _check(self, ("max_body", "max_sessions", "max_in_flight"), low=1)
        _check(self, ("retry_ms", "max_queued", "stream_after"), low=0)
        _check(self, ("keepalive", "store_timeout", "head_timeout"), low=0, above=True)
        _check(self, ("close_idle_streams", "idle_timeout", "body_timeout"), low=0, above=True, optional=True)
        if self.response_mode not in ("resumable", "auto", "sse"):
            raise ValueError(
                f"response_mode must be 'resumable', 'auto' or 'sse', got {self.response_mode!r}"
            )
        if self.store_liveness < 3 * self.store_timeout:
            raise ValueError(
                f"store_liveness must be at least 3 times store_timeout ({3 * self.store_timeout:g}), "
                f"got {self.store_liveness!r}: a refresh that takes store_timeout must land before it lapses"
            )
        if self.stateless and self.store is not None:
            raise ValueError("stateless and store exclude each other: a stateless server keeps no sessions")
        if not self.path.startswith("/"):
            raise ValueError(f"path must start with '/', got {self.path!r}")

    def lane_options(self) -> SessionOptions:
        """The options every lane's Session is built with (one value, shared by all of them).

        The body is decoded with the same `max_frame` as the lanes use: a frame the lane would refuse is
        refused on the POST itself (an error answer), never handed to a lane that drops it unanswered.

        A lane's outbox mark is the SSE pipe's (`SSE_HIGH_WATER`, 64 KiB) unless `session_options` sets one
        other than the Session's default (1 MiB, `HIGH_WATER`): that value reads as not set (a frozen
        dataclass cannot tell it from its default), so to keep about 1 MiB for the lanes set
        `HIGH_WATER + 1`. A lane's outbox sits before its stream's SSE pipe: for a client that stops
        reading, a stream held the outbox's mark plus the pipe's (1,049,280 + 66,642 bytes measured, with
        1 KiB logs), with every POST in flight (`max_in_flight`, 1,024) able to hold that much; with the
        pipe's mark, 65,580 + 66,642. The price, measured: a handler streaming 2,000 1 KiB logs to a fast
        SSE reader took ~24-26 ms of CPU per POST against ~19-21 ms (its writes wait for the outbox to
        drain more often). A response never waits for the pipe.
        """
        base = self.session_options if self.session_options is not None else SessionOptions()
        changes: dict[str, int] = {}
        if base.max_frame > self.max_body:
            changes["max_frame"] = self.max_body
        if base.outbox_high_water == HIGH_WATER:
            changes["outbox_high_water"] = SSE_HIGH_WATER
        return dataclasses.replace(base, **changes) if changes else base


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HttpClientOptions:
    """Knobs of the Streamable HTTP client transport (`StreamableHTTPTransport`)."""

    connect_timeout: float = 30.0
    """Seconds to connect and to write a request; reading has no limit (a stream stays quiet while a tool
    works: the client's request ``timeout`` governs waiting for answers)."""

    reconnect_delay: float = 1.0
    """Seconds before resuming a broken SSE stream when the server gave no `retry`."""

    max_reconnects: int = 3
    """Resumptions in a row that bring nothing new before a stream is given up; also how many times a 503
    with a short `Retry-After` is waited out before its error is the answer."""

    get_stream: bool = True
    """Open the standalone GET stream (the server's own notifications and requests) once initialized."""

    terminate_on_close: bool = True
    """Send `DELETE` for the HTTP session when the transport closes."""

    max_buffer: int = 1024
    """Chunks from the server waiting for the Session to read them; past it, reading responses waits."""

    max_message: int = 64 * 1024 * 1024
    """The largest JSON body or SSE event the client reads from the server (bytes; the core's default
    frame limit). A larger one is not buffered: the request it answers fails with an error saying so and
    the stream carrying it is closed, so a hostile or broken server cannot grow the client's memory."""

    lean: bool = dataclasses.field(default_factory=lambda: os.environ.get("MCPFRAME_HTTP_LEAN") != "0")
    """Post requests and notifications over the lean keep-alive HTTP/1.1 client (`http/client_lean.py`:
    asyncio + httptools, ~8x less client CPU per call than httpx) where it applies: a plain `http://` URL,
    no `http_client` or `auth` given, no proxy in the environment, asyncio running. Elsewhere (`https://`,
    trio, a caller's client...), and for the GET streams and `DELETE`, httpx is used. On by default;
    `False` or `MCPFRAME_HTTP_LEAN=0` keeps every request on httpx."""

    def __post_init__(self) -> None:
        _check(self, ("connect_timeout",), low=0, above=True)
        _check(self, ("reconnect_delay", "max_reconnects"), low=0)
        _check(self, ("max_buffer", "max_message"), low=1)


def _check(
    options: object, names: tuple[str, ...], *, low: float, above: bool = False, optional: bool = False
) -> None:
    """Refuse a knob out of range where the options are written, not at the first request: each value
    at least ``low`` (``above``: more than ``low``), or ``None`` when ``optional``."""
    for name in names:
        value = getattr(options, name)
        if value is None and optional:
            continue
        if value is None or value < low or (above and value == low):
            bound = f"more than {low}" if above else f"at least {low}"
            also = " (or None)" if optional else ""
            raise ValueError(f"{type(options).__name__}.{name} must be {bound}{also}, got {value!r}")
