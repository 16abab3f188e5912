"""HTTP sessions (`Mcp-Session-Id`): one `ServerConnection` each, its exchanges, its GET stream, its reaper.

The session's own `Session` (the "main" one) carries what belongs to no request: change notifications from
the server (`list_changed`, `resources/updated`) go out on the standalone GET stream, and the client's
notifications (`initialized`, `roots/list_changed`) come in through it. Requests are answered by exchanges.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import sniffio

from mcpframe import core, jsonrpc
from mcpframe.protocol import LEGACY_VERSIONS
from mcpframe.session import Session

from .events import EventStore
from .exchange import MAIN, NOTIFICATION_PREFIX, LanePool, RequestHandler, Router
from .headers import MCP_PROTOCOL_VERSION, MCP_SESSION_ID
from .pipe import BoundedPipe
from .responses import Reply, error_response
from .store import StoreUnavailable
from .streams import Stream

if TYPE_CHECKING:
    from mcpframe.server import ServerConnection

    from .exchange import Exchange
    from .store import SessionState
    from .store_sessions import SharedSessions

__all__ = ["HttpSession", "MainTransport", "SessionManager"]

logger = logging.getLogger("mcpframe.http")

NOTIFICATIONS_QUEUED = 1024 * 1024
"""Bytes of a session's client notifications that may wait for its handlers before a POST waits for room."""
NOTIFICATION_WAIT = 10.0
"""Seconds a POSTed notification waits for room before the POST is refused (503, `Retry-After`): a hung
notification handler must not hold POSTs, nor keep its session from the idle reaper, for ever."""


LANE_SWEEP = 30.0
"""Seconds between the reaper's rounds at most: idle sessions are closed (`idle_timeout`), and the idle lanes
a session kept past its baseline for a burst of requests end after one to two rounds unused."""


def _now() -> float:
    """The event loop's clock (what `anyio.current_time()` reads on asyncio, without the backend lookup)."""
    return asyncio.get_running_loop().time()


class MainTransport:
    """The main Session's pipe: routed client notifications (and answers to its own requests) in, server
    notifications and requests out to the GET stream.

    A request the main Session sends (a notification handler asking the client something) gets a
    session-wide id from the router, as an exchange's requests do, so that the client's answer, POSTed like
    any other, finds its way back here and cannot be taken for an exchange's.

    Notifications wait in a queue of at most `limit` bytes: when the session's notification handlers fall
    behind (its Session stops reading once their backlog is full), a POST waits for room (`reserve`), so a
    client that posts notifications faster than they are handled waits for its `202` instead of growing the
    server.
    """

    def __init__(self, stream: Stream, router: Router, *, limit: int = NOTIFICATIONS_QUEUED) -> None:
        self.stream = stream
        self.router = router
        router.main = self.answer
        self._in = BoundedPipe(limit)

    async def reserve(self, size: int) -> bool:
        """Wait until `size` bytes of notifications fit in the queue (in turn with other POSTs); `False` when
        no room came within `NOTIFICATION_WAIT` seconds. The room is the caller's if it queues them with
        `notify_now` before it awaits anything: a POST's notifications are queued all or none."""
        try:
            async with asyncio.timeout(NOTIFICATION_WAIT):
                await self._in.wait_room(size)
        except TimeoutError:
            return False
        return True

    def notify_now(self, data: bytes) -> None:
        """Queue a client notification frame (room reserved by `reserve`; dropped if the session ended)."""
        if not self._in.put_now(data):
            logger.debug("dropping a notification for a closed session")

    def answer(self, data: bytes) -> None:
        """Queue the client's answer to a request of the main Session (never waits: one per request sent)."""
        if not self._in.put_now(data):
            logger.debug("dropping an answer for a closed session")

    @property
    def queued(self) -> int:
        """Bytes of client frames not yet read by the session (at most `limit`, plus answers)."""
        return self._in.size

    async def receive(self) -> bytes:
        """The next client frames; `b""` once the session ends."""
        return await self._in.get() or b""

    async def send(self, data: bytes) -> None:
        """Server notifications: onto the standalone GET stream (stored if resumable, else only if open)."""
        for line in data.split(b"\n"):
            if line:
                try:
                    await self.stream.emit(self._outgoing(line), response=False)
                except StoreUnavailable as exc:  # a notification lost, the session kept
                    logger.warning("dropping a notification: %s", exc)

    def _outgoing(self, frame: bytes) -> bytes:
        """A request of the main Session gets its session-wide id; anything else goes out as it is."""
        if frame.startswith(NOTIFICATION_PREFIX):  # the core encoders' key order: no need to decode it
            return frame
        message: Any = core.decode(frame, lazy=True)[0]
        if getattr(message, "kind", None) != "request":
            return frame
        return self.router.stamped(MAIN, message)

    async def aclose(self) -> None:
        """Idempotent."""
        self._in.close()


class HttpSession:
    """One `Mcp-Session-Id`: the connection state, the exchanges answering its POSTs, its GET stream."""

    def __init__(self, session_id: str, connection: ServerConnection, store: EventStore | None) -> None:
        self.id = session_id
        self.connection = connection
        connection.task_owner = session_id  # its tasks are this session's, on whichever instance
        self.store = store
        self.router = Router()
        self.lanes: LanePool | None = None  # the Sessions answering its POSTs (created by the first one)
        self.streams: dict[str, Stream] = {}
        self.closed = False
        self.get_stream = self.new_stream(buffer_until_attached=False)
        self.transport = MainTransport(self.get_stream, self.router, limit=NOTIFICATIONS_QUEUED)
        self.main = Session(self.transport, notification_handler=connection.handle_notification)
        self.open_requests = 0
        # its loop, asked for once: `touch` runs per POST, and the lookup compares the process id on 3.11
        self.loop = asyncio.get_running_loop()
        self.last_active = self.loop.time()
        self.owner: str | None = None
        self.handler: RequestHandler = connection.handle_request  # what its lanes answer requests with
        self.state: SessionState | None = None  # with a shared store: the state last read or written
        # the header lines of its JSON answers (`fast_pending.json_lines`): built once, not per request
        self.json_lines: bytes | None = None

    @property
    def version(self) -> str | None:
        """The negotiated protocol version (`None` before `initialize` succeeded)."""
        return self.connection.version

    def new_stream(self, *, buffer_until_attached: bool = True) -> Stream:
        """A stream of this session (resumable when there is an event store)."""
        stream = Stream(self.id, self.store, buffer_until_attached=buffer_until_attached)
        self.streams[stream.id] = stream
        if self.closed:  # made while (or after) the session closes: nobody would finish it
            stream.finish()
        return stream

    def touch(self, delta: int = 0) -> None:
        """Record activity; `delta` counts HTTP requests/responses that are open right now."""
        self.open_requests += delta
        self.last_active = self.loop.time()

    def exchanges(self) -> list[Exchange]:
        """The exchanges still running."""
        return list(self.router.exchanges.values())

    def stream_ended(self, stream: Stream) -> None:
        """Forget a finished stream nobody reads (its events stay replayable from the store)."""
        if stream.finished.is_set() and not stream.attached and stream is not self.get_stream:
            self.streams.pop(stream.id, None)

    async def close(self) -> None:
        """End the session: running handlers are cancelled, streams end, stored events are dropped."""
        if self.closed:
            return
        self.closed = True
        if self.lanes is not None:
            self.lanes.close()
        for exchange in self.exchanges():
            await exchange.abort()
        # a snapshot: `finish` runs wake-up callbacks, which may forget streams (an exchange's end) or
        # add one (finished by `new_stream` itself, as the session is closed)
        for stream in list(self.streams.values()):
            stream.finish()
        await self.main.aclose()
        if self.store is not None:
            await self.store.forget(self.id)


class SessionManager:
    """All live HTTP sessions, their ids, and the reaper of idle ones."""

    def __init__(
        self,
        connect: Callable[[], ServerConnection],
        *,
        store: EventStore | None,
        idle_timeout: float | None = 1800.0,
        max_sessions: int = 10_000,
    ) -> None:
        self.connect = connect  # a new connection of the MCP server, one per session
        self.store = store
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.sessions: dict[str, HttpSession] = {}
        self.shared: SharedSessions | None = None  # set by the server with `HttpOptions(store=...)`
        self._tg: anyio.abc.TaskGroup | None = None
        self._library = "asyncio"  # the async library `run` runs on (told to anyio by `spawn`)
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop `run` runs on, while it runs

    @property
    def task_group(self) -> anyio.abc.TaskGroup:
        """Where exchanges and main Sessions run (they outlive the HTTP requests that started them)."""
        if self._tg is None:
            raise RuntimeError("the HTTP server is not running: use `async with server:` (or its lifespan)")
        return self._tg

    async def run(self, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the task group until cancelled; reap idle sessions meanwhile."""
        self._library = sniffio.current_async_library()
        if self._library == "asyncio":
            self.loop = asyncio.get_running_loop()
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                if self.shared is not None:
                    await self.shared.start(tg)
                task_status.started()
                await self._reap_forever()
        finally:
            self._tg = None
            self.loop = None
            with anyio.CancelScope(shield=True):
                for session in list(self.sessions.values()):
                    await session.close()
                self.sessions.clear()
                if self.shared is not None:
                    await self.shared.close()

    async def _reap_forever(self) -> None:
        timeout = self.idle_timeout
        period = LANE_SWEEP if timeout is None else max(0.01, min(timeout / 4, LANE_SWEEP))
        while True:
            await anyio.sleep(period)
            await self.reap()
            self.sweep_lanes()

    def sweep_lanes(self) -> int:
        """End the idle lanes each session keeps past its baseline that no POST took since the last sweep
        (`LanePool.sweep`: what a burst of requests in flight made); returns how many."""
        return sum(s.lanes.sweep() for s in self.sessions.values() if s.lanes is not None)

    async def reap(self) -> int:
        """Close the sessions idle past `idle_timeout` (no open HTTP request); returns how many."""
        if self.idle_timeout is None:
            return 0
        now = _now()
        idle = [
            s
            for s in self.sessions.values()
            if s.open_requests <= 0 and now - s.last_active >= self.idle_timeout
        ]
        for session in idle:
            logger.debug("closing idle session %s", session.id)
            await self.end(session)
        return len(idle)

    def full(self) -> bool:
        """Whether a new session would exceed `max_sessions`. With a shared store, the least recently used
        idle session is dropped first to make room (its state is in the store: a request rebuilds it)."""
        if len(self.sessions) < self.max_sessions:
            return False
        return self.shared is None or not self.shared.evict_idle()

    def create(self, owner: str | None, session_id: str | None = None) -> HttpSession:
        """A new session (with a fresh, unguessable id unless one is given); its main Session starts."""
        if session_id is None:
            session_id = secrets.token_urlsafe(24)
        session = HttpSession(session_id, self.connect(), self.store)
        session.owner = owner
        if self.shared is not None:
            self.shared.prepare(session)
        self.sessions[session_id] = session
        self.task_group.start_soon(self._run_main, session)
        return session

    async def _run_main(self, session: HttpSession) -> None:
        try:
            await session.connection.run(session.main)
        finally:
            if self.sessions.get(session.id) is session:
                del self.sessions[session.id]

    def get(self, session_id: str) -> HttpSession | None:
        """The live session with this id."""
        return self.sessions.get(session_id)

    def find(self, headers: dict[str, str], owner: str | None) -> HttpSession | Reply:
        """The session a request names: 400 without the header, 404 for an unknown or expired one (or one
        of another principal), 400 for a protocol version that has no sessions."""
        session_id = headers.get(MCP_SESSION_ID)
        if session_id is None:
            return error_response(400, "Bad Request: the Mcp-Session-Id header is required")
        session = self.sessions.get(session_id)
        if session is None or session.closed or session.owner != owner:
            return error_response(404, "Not Found: unknown or expired session", code=jsonrpc.INVALID_REQUEST)
        version = headers.get(MCP_PROTOCOL_VERSION)
        if version is not None and version not in LEGACY_VERSIONS:
            return error_response(400, f"Bad Request: MCP-Protocol-Version {version!r} has no sessions")
        return session

    async def end(self, session: HttpSession) -> None:
        """Close and forget a session (DELETE, idle, or a failed initialize)."""
        self.sessions.pop(session.id, None)
        await session.close()

    def spawn(self, func: Callable[..., Any], *args: Any) -> None:
        """Run a coroutine function in the manager's task group. Safe where no task runs (a protocol's
        `connection_lost`, a loop timer): the library `run` runs on is named for the call (`naming`)."""
        naming(self._library, self.task_group.start_soon, func, *args)


def naming(library: str, func: Callable[..., Any], *args: Any) -> Any:
    """`func(*args)` with `library` named to sniffio for the call. Where no task runs (a loop callback),
    sniffio finds no task to ask, and only a loop started by `anyio.run` names its library in the context:
    under plain `asyncio.run` anyio could not tell the library and `start_soon` (or a loop token) fails."""
    named = sniffio.current_async_library_cvar.set(library)
    try:
        return func(*args)
    finally:
        sniffio.current_async_library_cvar.reset(named)
