"""`SharedSessions`: what the session manager and the endpoint do differently with a shared store.

Any instance may get any request of a session. It reads the session's state from the store on every
request (one round trip, which also refreshes the session's time to live), rebuilds the session when it
has none here (or updates the one it has), and writes the state back when a request changed it, before
that request's answer goes out, so the client's next request finds it wherever it lands. The standalone
GET stream is read from the store (`SharedStore.tail`), whichever instance writes to it.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio.abc

from mcpframe import core, jsonrpc, protocol
from mcpframe.protocol import LEGACY_VERSIONS
from mcpframe.session import JSONRPCError, Request

from .events import split_event_id
from .headers import MCP_PROTOCOL_VERSION, MCP_SESSION_ID
from .pipe import Pipe
from .responses import Reply, error_response
from .store import GET_STREAM, SessionState, SharedStore, StoreUnavailable
from .streams import Stream, _priming

if TYPE_CHECKING:
    from .exchange import RequestHandler
    from .sessions import HttpSession, SessionManager

__all__ = ["SharedSessions"]

_SAFE_IDS = 2**53 - 2**32  # random starting points of request ids, each with 2**32 ids of room below 2**53

logger = logging.getLogger("mcpframe.http")


class SharedSessions:
    """The shared-store side of a `SessionManager` (which owns it as `manager.shared`)."""

    def __init__(self, manager: SessionManager, store: SharedStore) -> None:
        self.manager = manager
        self.store = store
        self.tails: set[Pipe] = set()  # the pipes of the GET responses reading the store here
        # where a body relayed for a legacy SSE session goes (`legacy_shared.SharedLegacy.deliver`)
        self.legacy: Callable[[str, bytes], None] | None = None

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Connect to the store and listen for cancels published by other instances."""
        listen = await self.store.start(self.deliver)
        tg.start_soon(listen)

    # ------------------------------------------------------------ sessions

    def prepare(self, session: HttpSession) -> None:
        """A session created (or rebuilt) here: its GET stream is the shared one, its requests save state."""
        stream = session.get_stream
        del session.streams[stream.id]
        stream.id = GET_STREAM
        session.streams[GET_STREAM] = stream
        # the ids of requests to the client start at a random point: unique across instances, so a client's
        # answer that lands elsewhere is published and taken by the one instance that asked. Below 2**53:
        # a JavaScript client reads ids as doubles, and a larger one would not come back intact
        session.router.ids = core.IdMap(first_id=secrets.randbelow(_SAFE_IDS) + 1)
        session.handler = self._saving_handler(session)

    def _saving_handler(self, session: HttpSession) -> RequestHandler:
        conn = session.connection
        handle = conn.handle_request

        async def handler(request: Request) -> Any:
            result = await handle(request)
            state = session.state
            if conn.version is not None and (state is None or state.changed(conn)):
                new = SessionState.of(conn, session.owner)
                try:
                    await self.store.save(session.id, new)
                except StoreUnavailable as exc:
                    if state is None:
                        conn.version = None  # initialize not recorded: no session is created
                    raise JSONRPCError(jsonrpc.INTERNAL_ERROR, f"Service Unavailable: {exc}") from exc
                session.state = new
            return result

        return handler

    async def lookup(self, headers: dict[str, str], owner: str | None) -> HttpSession | Reply:
        """`SessionManager.find` reading the store: the session, rebuilt here if need be, or the refusal."""
        session_id = headers.get(MCP_SESSION_ID)
        if session_id is None:
            return error_response(400, "Bad Request: the Mcp-Session-Id header is required")
        version = headers.get(MCP_PROTOCOL_VERSION)
        if version is not None and version not in LEGACY_VERSIONS:
            return error_response(400, f"Bad Request: MCP-Protocol-Version {version!r} has no sessions")
        state = await self.store.load(session_id)
        # read after the await: another request may have rebuilt it meanwhile
        local = self.manager.sessions.get(session_id)
        if state is None or state.owner != owner:
            if local is not None and state is None:
                await self.manager.end(local)  # deleted or expired everywhere
            return error_response(404, "Not Found: unknown or expired session", code=jsonrpc.INVALID_REQUEST)
        if local is None or local.closed:
            local = self.manager.create(owner, session_id)
            state.apply(local.connection)
            local.state = state
        elif local.state != state:  # another instance changed it
            state.apply(local.connection)
            local.state = state
        return local

    async def delete(self, session: HttpSession) -> None:
        """DELETE: gone from the store (every instance), then from here."""
        await self.store.delete(session.id)
        await self.manager.end(session)

    # ------------------------------------------------------------ cancels and answers from elsewhere

    def publish_cancel(self, session: HttpSession, rid: object, frame: bytes) -> bool:
        """A cancel for a request not running here: publish it; `False` when it runs here after all."""
        if isinstance(rid, int | str) and session.router.busy(rid):
            return False
        self.publish(session, frame)
        return True

    def publish(self, session: HttpSession, frame: bytes) -> None:
        """Hand a client's frame to the other instances (nobody waits for it)."""
        self.manager.spawn(self._quietly, self.store.publish(session.id, frame))

    def deliver(self, session_id: str, frame: bytes) -> None:
        """A frame another instance published: a cancel or an answer for a request of this instance, or a
        body for a legacy SSE session (`l:<session>`)."""
        if session_id.startswith("l:"):
            if self.legacy is not None:
                self.legacy(session_id[2:], frame)
            return
        session = self.manager.sessions.get(session_id)
        if session is None:
            return
        try:
            doc = json.loads(frame)
        except ValueError:
            return
        if not isinstance(doc, dict):
            return
        if doc.get("method") == protocol.NOTIFICATIONS_CANCELLED:
            params = doc.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            exchange = session.router.owners.get(rid) if isinstance(rid, int | str) else None
            if exchange is not None and isinstance(rid, int | str):
                exchange.cancelled(rid, frame)
            return
        rid = doc.get("id")
        mapped = session.router.ids.discard(rid) if isinstance(rid, int | str) else None
        if mapped is not None:  # an answer to a request this instance sent: back with the original id
            number, original = mapped
            exchange = session.router.exchanges.get(number)
            if exchange is not None:
                doc["id"] = original
                exchange.transport.feed(json.dumps(doc, separators=(",", ":")).encode() + b"\n")

    # ------------------------------------------------------------ streams

    def stream_done(self, session: HttpSession, stream: Stream) -> None:
        """A POST's exchange ended: mark its stored stream ended, for a tail on another instance."""
        if stream.attached_once and stream.resumable:
            self.manager.spawn(self._quietly, self.store.end_stream(session.id, stream.id))

    async def open_get(self, session: HttpSession, retry_ms: int | None) -> tuple[Stream, Pipe]:
        """A new GET stream: a priming entry marks where it starts, then the store is tailed from there."""
        event_id = await self.store.store(session.id, GET_STREAM, None)
        pipe = Pipe()
        if retry_ms is not None:
            pipe.put(_priming(event_id, retry_ms))
        return self._tail(session, GET_STREAM, int(event_id.rpartition(".")[2]), pipe)

    async def resume(self, session: HttpSession, last_event_id: str) -> tuple[Stream, Pipe] | None:
        """Resume any stream of the session from the store, whichever instance wrote it; `None`: unknown."""
        parsed = split_event_id(last_event_id)
        if parsed is None or await self.store.replay(session.id, last_event_id) is None:
            return None
        return self._tail(session, parsed[0], parsed[1], Pipe())

    def _tail(self, session: HttpSession, stream_id: str, after: int, pipe: Pipe) -> tuple[Stream, Pipe]:
        stream = Stream(session.id, self.store)  # what the SSE reply detaches from: closing the pipe
        stream.id = stream_id
        self.tails.add(pipe)
        self.manager.spawn(self._run_tail, session.id, stream_id, after, pipe)
        return stream, pipe

    async def _run_tail(self, session_id: str, stream_id: str, after: int, pipe: Pipe) -> None:
        try:
            await self.store.tail(session_id, stream_id, after, pipe)
        finally:
            self.tails.discard(pipe)

    def end_tails(self) -> None:
        """Shutting down: the responses reading the store end (their clients resume on another instance)."""
        for pipe in list(self.tails):
            pipe.close()

    @staticmethod
    async def _quietly(call: Awaitable[None]) -> None:
        """A store call nobody waits for: a failure is logged, never raised into the task group."""
        try:
            await call
        except StoreUnavailable as exc:
            logger.warning("%s", exc)
