"""`SharedSessions`: what the session manager and the endpoint do differently with a shared store.

Any instance may get any request of a session. It reads the session's state from the store on every
request (one round trip, which also refreshes the session's time to live), rebuilds the session when it
has none here (or updates the one it has), and writes the state back when a request changed it, before
that request's answer goes out, so the client's next request finds it wherever it lands. The standalone
GET stream is read from the store (`SharedStore.tail`), whichever instance writes to it.

The instance says it is alive in the store, and claims the GET streams it holds there, refreshing both
every quarter of `liveness` on a timer of its own (never on a stream's traffic): a second GET of a session,
wherever it lands, gets 409 as on one instance, and a resume (`Last-Event-ID`) takes the stream over. Its
local copies of sessions count against `max_sessions`; at the bound the least recently used idle copy is
dropped (its state is in the store) to make room.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from functools import partial
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
    from .events import EventStore
    from .exchange import Exchange, RequestHandler
    from .sessions import HttpSession, SessionManager

__all__ = ["SharedSessions"]

_SAFE_IDS = 2**53 - 2**32  # random starting points of request ids, each with 2**32 ids of room below 2**53

logger = logging.getLogger("mcpframe.http")


class SharedSessions:
    """The shared-store side of a `SessionManager` (which owns it as `manager.shared`)."""

    def __init__(self, manager: SessionManager, store: SharedStore) -> None:
        self.manager = manager
        self.store = store
        self.tails: dict[Pipe, anyio.CancelScope] = {}  # the responses reading the store here, their tails
        self.claims: dict[str, tuple[str, Pipe]] = {}  # session -> (claim token, pipe) of a GET held here
        # where a body relayed for a legacy SSE session goes (`legacy_shared.SharedLegacy.deliver`)
        self.legacy: Callable[[str, bytes], None] | None = None

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Connect to the store, say this instance is alive, listen for what other instances publish."""
        listen = await self.store.start(self.deliver)
        try:
            await self.store.refresh({})
        except StoreUnavailable as exc:  # late: `_keep_alive` says it again soon
            if not exc.late:
                raise
            logger.warning("%s (saying this instance is alive)", exc)
        tg.start_soon(listen)
        tg.start_soon(self._keep_alive)

    async def _keep_alive(self) -> None:
        """Refresh the liveness key and the GET claims every quarter of their time to live; close a GET
        whose claim was taken over (a resume on another instance) or lapsed."""
        while True:
            await anyio.sleep(self.store.liveness / 4)
            claims = {session_id: token for session_id, (token, _) in self.claims.items()}
            try:
                lost = await self.store.refresh(claims)
            except StoreUnavailable as exc:
                logger.warning("%s (refreshing this instance's liveness)", exc)
                continue
            for session_id in lost:
                held = self.claims.get(session_id)
                if held is not None and held[0] == claims[session_id]:  # not replaced meanwhile
                    del self.claims[session_id]
                    held[1].close()

    async def close(self) -> None:
        """Stopping: this instance is no longer alive and holds no GET stream; then disconnect."""
        claims = {session_id: token for session_id, (token, _) in self.claims.items()}
        self.claims.clear()
        try:
            await self.store.retire(claims)
        except StoreUnavailable as exc:
            logger.warning("%s (its keys lapse in %g s)", exc, self.store.liveness)
        await self.store.aclose()

    def evict_idle(self) -> bool:
        """At `max_sessions`: drop the least recently used idle local copy of a session (no request, no
        stream, no task running here; its state is in the store, nothing is lost). `False`: none is."""
        idle = [
            s
            for s in self.manager.sessions.values()
            if s.open_requests <= 0
            and not s.router.exchanges
            and s.state is not None
            and not s.closed
            and not s.connection.server.tasks.busy(s.connection)
        ]
        if not idle:
            return False
        victim = min(idle, key=lambda s: s.last_active)
        logger.debug("dropping the idle copy of session %s (max_sessions)", victim.id)
        del self.manager.sessions[victim.id]
        self.manager.spawn(self.manager.end, victim)
        return True

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
            if self.manager.full():  # `full` drops an idle copy when it can
                why = f"Service Unavailable: too many sessions on this instance ({self.manager.max_sessions})"
                return error_response(503, why, code=jsonrpc.INTERNAL_ERROR, headers={"Retry-After": "1"})
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
        """A frame another instance published: a cancel or an answer for a request of this instance, a
        body for a legacy SSE session (`l:<session>`), or a GET stream taken over (`g:<session>`)."""
        if session_id.startswith("l:"):
            if self.legacy is not None:
                self.legacy(session_id[2:], frame)
            return
        if session_id.startswith("g:"):  # a resume elsewhere took this GET stream over
            self._taken_over(session_id[2:], frame.decode("ascii", "replace"))
            return
        session = self.manager.sessions.get(session_id)
        if session is None:
            return
        try:
            doc = json.loads(frame)
        except ValueError:
            return
        if isinstance(doc, dict):
            self._take(session, doc, frame)

    @staticmethod
    def _take(session: HttpSession, doc: dict[str, Any], frame: bytes) -> None:
        """A client's frame published for this session: a cancel, or an answer to a request sent here."""
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

    def exchange_started(self, session: HttpSession, exchange: Exchange) -> None:
        """A POST's exchange starts here: its stream names this instance and its requests (in each event
        stored), so that a resume elsewhere can end it if this instance dies."""
        stream = exchange.stream
        if stream.resumable and exchange.request_ids:
            self.store.describe(stream.id, list(exchange.request_ids))
        exchange.on_close.append(partial(self.stream_done, session, stream))

    def stream_done(self, session: HttpSession, stream: Stream) -> None:
        """A POST's exchange ended: mark its stored stream ended, for a tail on another instance."""
        self.store.undescribe(stream.id)  # answered: its end marker names nobody
        if stream.attached_once and stream.resumable:
            self.manager.spawn(self._quietly, self.store.end_stream(session.id, stream.id))

    async def open_get(self, session: HttpSession, retry_ms: int | None) -> tuple[Stream, Pipe] | None:
        """A new GET stream, claimed in the store (`None`: another response holds it, on any instance: 409);
        a priming entry marks where it starts, then the store is tailed from there."""
        token = f"{self.store.instance}:{secrets.token_hex(6)}"
        session.touch(+1)  # busy while it waits: not the idle copy `evict_idle` drops
        try:
            if not await self.store.claim_get(session.id, token, take=False):
                return None
            event_id = await self.store.store(session.id, GET_STREAM, None)  # only once claimed
        except BaseException:
            with anyio.CancelScope(shield=True), contextlib.suppress(StoreUnavailable):
                await self.store.release_get(session.id, token)
            raise
        finally:
            session.touch(-1)
        pipe = Pipe()
        if retry_ms is not None:
            pipe.put(_priming(event_id, retry_ms))
        return self._tail(session, GET_STREAM, int(event_id.rpartition(".")[2]), pipe, token)

    async def resume(self, session: HttpSession, last_event_id: str) -> tuple[Stream, Pipe] | None:
        """Resume any stream of the session from the store, whichever instance wrote it; `None`: unknown.
        Resuming the GET stream takes its claim over: the response that held it ends, on whichever instance
        (told on the `route` channel), as on one instance a newer connection replaces the old one."""
        parsed = split_event_id(last_event_id)
        if parsed is None:
            return None
        session.touch(+1)  # busy while it waits: not the idle copy `evict_idle` drops
        try:
            if await self.store.replay(session.id, last_event_id) is None:
                return None
            token = None
            if parsed[0] == GET_STREAM:
                token = f"{self.store.instance}:{secrets.token_hex(6)}"
                await self.store.claim_get(session.id, token, take=True)
                self._taken_over(session.id, token)
                self.manager.spawn(self._quietly, self.store.publish("g:" + session.id, token.encode()))
        finally:
            session.touch(-1)
        return self._tail(session, parsed[0], parsed[1], Pipe(), token)

    def _tail(
        self, session: HttpSession, stream_id: str, after: int, pipe: Pipe, token: str | None = None
    ) -> tuple[Stream, Pipe]:
        if token is not None:
            self.claims[session.id] = (token, pipe)
        stream = _TailStream(session.id, self.store, partial(self._detached, session.id, pipe))
        stream.id = stream_id
        self.manager.spawn(self._run_tail, session.id, stream_id, after, pipe)
        return stream, pipe

    async def _run_tail(self, session_id: str, stream_id: str, after: int, pipe: Pipe) -> None:
        with anyio.CancelScope() as scope:
            self.tails[pipe] = scope
            try:
                await self.store.tail(session_id, stream_id, after, pipe)
            finally:
                self.tails.pop(pipe, None)

    def _taken_over(self, session_id: str, token: str) -> None:
        """The GET stream's claim is `token` now: a response here holding an older one ends (its client
        reads the stream where it resumed it)."""
        held = self.claims.get(session_id)
        if held is not None and held[0] != token:
            del self.claims[session_id]
            held[1].close()

    def _detached(self, session_id: str, pipe: Pipe) -> None:
        """The response reading `pipe` ended: its tail stops, its claim (if still its own) goes."""
        scope = self.tails.pop(pipe, None)
        if scope is not None:
            scope.cancel()
        held = self.claims.get(session_id)
        if held is not None and held[1] is pipe:
            with contextlib.suppress(RuntimeError):  # stopping: `close` releases what is still claimed
                self.manager.spawn(self._release, session_id, held)

    async def _release(self, session_id: str, held: tuple[str, Pipe]) -> None:
        """Release a claim; it stays listed until then (if this fails, `close` or its lapse ends it)."""
        await self._quietly(self.store.release_get(session_id, held[0]))
        if self.claims.get(session_id) is held:
            del self.claims[session_id]

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


class _TailStream(Stream):
    """The stream a response reading the store detaches from: detaching stops its tail (`on_detach`)."""

    def __init__(self, session_id: str, store: EventStore, on_detach: Callable[[], None]) -> None:
        super().__init__(session_id, store)
        self.on_detach = on_detach

    def detach(self, pipe: Pipe) -> None:
        """The response ended: the pipe closes, then the tail and the claim go."""
        super().detach(pipe)
        self.on_detach()
