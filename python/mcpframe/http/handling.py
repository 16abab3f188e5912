"""POST: validate the request, sort its body, route what needs no answer, admit and answer the requests.

`PostHandler` is given what it uses and nothing more: the options, the HTTP sessions, the server-wide
admission bound, a way to open a connection of the MCP server (for stateless requests), and the SSE
replies. It never sees the `StreamableHTTPServer` that composes it, so it can be built and tested alone.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from functools import partial
from types import EllipsisType
from typing import TYPE_CHECKING, Any

from mcpframe import jsonrpc, protocol
from mcpframe._api import MessageLike
from mcpframe.session import Request, Session
from mcpframe.session.inline import start_inline

from .admission import Admission, Slot
from .asgi import ClientDisconnect, HttpRequest, Receive, TooLarge, TooSlow, watch_disconnect
from .deadlines import Deadlines
from .exchange import Exchange, Lane, LanePool, RequestHandler, Router
from .headers import (
    FIRST_STATELESS,
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    Accepts,
    is_json_content,
    mirror_mismatch,
)
from .options import HttpOptions
from .post import Body, one_line
from .responses import (
    SSE_HEADERS,
    Answer,
    Reply,
    StreamReplies,
    error_response,
    json_response,
    too_slow,
    unanswered,
)
from .sessions import HttpSession, SessionManager
from .streams import Stream

if TYPE_CHECKING:
    from mcpframe.server import ServerConnection

__all__ = ["PostHandler"]

# idle lanes kept for the next POSTs: per HTTP session (there may be thousands), and for stateless requests;
# a session whose client had more requests in flight at once keeps that many, up to _SESSION_LANES_MOST:
# with only 4 kept, each request past the 4th made a new lane Session and took the full path (issue 11);
# those past _SESSION_LANES end once the reaper's sweep finds them unused (`LanePool.sweep`)
_SESSION_LANES = 4
_SESSION_LANES_MOST = 64
_STATELESS_LANES = 64
RETRY_AFTER = 1  # seconds, the `Retry-After` of a 503 for a full queue: about one slow handler's time
# seconds into a JSON wait before a client leaving is watched for with a task (uvicorn's; the lean server's
# `receive` tells at no cost): most answers come sooner, and pay no task (`asgi.watch_disconnect`)
_LEAVING_AFTER = 0.25


class PostHandler:
    """Everything a POST to the endpoint goes through."""

    def __init__(
        self,
        options: HttpOptions,
        *,
        sessions: SessionManager,
        admission: Admission,
        connect: Callable[[], ServerConnection],
        replies: StreamReplies,
    ) -> None:
        self.options = options
        self.sessions = sessions
        self.admission = admission
        self.connect = connect  # a new connection of the MCP server (each stateless request gets one)
        self.replies = replies
        self._lane_options = options.lane_options()  # one value for every lane's Session
        self._stateless: LanePool | None = None  # the lanes of 2026-07-28 requests (no HTTP session)
        # the loop's timeouts of `json_wait` for a client that takes SSE (`None`: no such wait), as of that
        # loop: read once per suspended fast POST (`fast_pending.Pending`), not looked up each time
        self.switch_after: tuple[asyncio.AbstractEventLoop | None, Deadlines | None] = (None, None)

    async def handle(self, request: HttpRequest, owner: str | None) -> Answer:
        """Check the headers and the body, then answer with 202, JSON or SSE."""
        accepts = Accepts.parse(request.headers.get("accept"))
        data = await self._read(request, accepts)
        if isinstance(data, Reply):
            return data
        modern = protocol.at_least(request.headers.get(MCP_PROTOCOL_VERSION, ""), FIRST_STATELESS)
        if self.options.stateless and not modern:
            return await self._stateless_legacy(request, data, accepts)
        return await self._decoded(request, data, accepts, owner, modern=modern)

    async def _decoded(
        self, request: HttpRequest, data: bytes, accepts: Accepts, owner: str | None, *, modern: bool
    ) -> Answer:
        """The body decoded in its session's rules (batches), then answered by era."""
        found = await self._session(request, owner) if not modern else None  # 2026-07-28 has no sessions
        if isinstance(found, Reply):
            return found
        batches = found is not None and protocol.batches_allowed(found.version)
        body = Body.decode(data, max_frame=self._lane_options.max_frame, batches=batches)
        refusal = body.refusal
        if refusal is not None:
            return refusal
        if body.modern:
            return await self._modern(request, body, accepts)
        if modern and not body.requests:
            return Reply(202)  # a stateless client's notification: nothing to route it to
        return await self._legacy(request, body, found, accepts, owner)

    async def _admit(self, request: HttpRequest, body: Body) -> Slot | Reply:
        """Room for the POST's requests (waiting in the queue if need be), or the reply refusing it."""
        admission = self.admission
        ping = all(r.method == protocol.PING for r in body.requests)
        got = await admission.enter(len(body.requests), request.receive, ping=ping)
        if isinstance(got, Slot):
            return got
        if got == "gone":
            return Reply(400)  # the client left while it waited: nobody is left to read this
        why = (
            f"Service Unavailable: server busy, {admission.max_in_flight} requests in flight and "
            f"{admission.max_queued} waiting (the HTTP server's max_in_flight and max_queued); "
            f"retry after {RETRY_AFTER} s"
        )
        rid = body.requests[0].id if len(body.requests) == 1 and not body.batch else None
        retry = {"Retry-After": str(RETRY_AFTER)}
        return error_response(503, why, code=jsonrpc.INTERNAL_ERROR, rid=rid, headers=retry)

    async def _session(self, request: HttpRequest, owner: str | None) -> HttpSession | Reply | None:
        if MCP_SESSION_ID not in request.headers:
            return None
        if self.sessions.shared is not None:  # any instance may have served it: ask the shared store
            return await self.sessions.shared.lookup(request.headers, owner)
        return self.sessions.find(request.headers, owner)

    async def _read(self, request: HttpRequest, accepts: Accepts) -> bytes | Reply:
        """The body, or the refusal of a request with the wrong media types or too big a body."""
        refusal = refusal_of(request.headers, accepts)
        if refusal is not None:
            return refusal
        limit = self.options.max_body
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return _too_big(limit)
        try:
            return await request.body(limit, self.options.body_timeout)
        except TooLarge:
            return _too_big(limit)
        except TooSlow:
            return too_slow(self.options.body_timeout)
        except ClientDisconnect:
            return Reply(400)  # nobody is left to read it

    async def _legacy(
        self,
        request: HttpRequest,
        body: Body,
        session: HttpSession | None,
        accepts: Accepts,
        owner: str | None,
    ) -> Answer:
        if session is None:
            if not body.initialize:
                return error_response(400, "Bad Request: the Mcp-Session-Id header is required")
            if self.sessions.full():
                return _too_many_sessions()
            if self.sessions.shared is not None:  # a session nobody could find again is no session: 503
                await self.sessions.shared.store.ping()
            slot = await self._admit(request, body)
        else:
            session.touch(+1)  # waiting for room counts as activity: the reaper leaves the session alone
            try:
                slot = await self._admit_and_route(request, session, body)
            finally:
                session.touch(-1)
        if isinstance(slot, Reply):
            return slot
        try:
            return await self._legacy_answer(body, session, accepts, owner, slot, receive=request.receive)
        except BaseException:
            slot.release()  # idempotent: the exchange (if any) releases it too when it ends
            raise

    async def _admit_and_route(self, request: HttpRequest, session: HttpSession, body: Body) -> Slot | Reply:
        """Room for the POST's requests, then its notifications and responses routed; the reply when nothing
        more is to be done. All or nothing: a POST refused (503: no room for its requests, or none for its
        notifications in the session's queue in time) routed none of its parts, so the client's retry of
        the whole body delivers each of them once."""
        refusal = _busy_ids(session, body)
        if refusal is not None:
            return refusal
        slot = await self._admit(request, body) if body.requests else None
        if isinstance(slot, Reply):
            return slot
        try:
            routed = await self._route_all(session, body)
        except BaseException:
            if slot is not None:
                slot.release()
            raise
        if not routed:
            if slot is not None:
                slot.release()
            why = "Service Unavailable: the session's notification handlers are behind; retry after 1 s"
            return error_response(503, why, code=jsonrpc.INTERNAL_ERROR, headers={"Retry-After": "1"})
        if slot is not None:
            return slot
        if body.errors:  # a batch of nothing but invalid parts
            return json_response(b"[" + b",".join(body.error_frames()) + b"]")
        return Reply(202)

    async def _route_all(self, session: HttpSession, body: Body) -> bool:
        """Route the body's notifications and responses in order, once the session's notification queue has
        room for all its notifications; `False`, nothing routed, when that room did not come in time."""
        size = sum(len(m.raw) + 1 for m in body.others if _queued(m))  # `one_line` makes none longer
        if size and not await session.transport.reserve(size):
            return False
        for message in body.others:  # no await from here on: the room reserved is theirs
            self._route(session, message)
        return True

    async def _legacy_answer(
        self,
        body: Body,
        session: HttpSession | None,
        accepts: Accepts,
        owner: str | None,
        slot: Slot,
        *,
        receive: Receive,
    ) -> Answer:
        """Answer an admitted POST in its session (created here for `initialize`)."""
        created = session is None
        if session is None:
            if self.sessions.full():  # others were created while this one waited
                slot.release()
                return _too_many_sessions()
            session = self.sessions.create(owner)
            session.touch()
        elif session.closed:  # deleted or reaped while this POST waited
            slot.release()
            return error_response(404, "Not Found: unknown or expired session", code=jsonrpc.INVALID_REQUEST)
        refusal = _busy_ids(session, body)  # again: a POST with the same id may have been admitted first
        if refusal is not None:
            slot.release()
            return refusal
        if body.batch:  # a batch Session reads batches: a lane of its own, ended afterwards
            lane = self._one_shot(session.router, session.handler, batches=True)
        else:
            lane = self.lanes(session).acquire()
        exchange = Exchange(
            lane,
            session.new_stream(),
            [r.id for r in body.requests if r.id is not None],
            batch=body.batch,
        )
        exchange.extra = body.error_frames()
        exchange.on_close.append(slot.release)
        shared = self.sessions.shared
        if shared is not None:
            shared.exchange_started(session, exchange)
        headers = {MCP_SESSION_ID: session.id}
        response = await self._answer(exchange, body, session, accepts, headers=headers, receive=receive)
        if created and exchange.stream.finished.is_set() and session.version is None:
            await self.sessions.end(session)  # initialize failed: no session
            response.headers.pop(MCP_SESSION_ID, None)
        return response

    @property
    def max_frame(self) -> int:
        """The largest frame (here: POST body) a lane's Session decodes."""
        return self._lane_options.max_frame

    def lanes(self, session: HttpSession) -> LanePool:
        """The pool of `session`'s lanes (made by its first POST)."""
        if session.lanes is None:
            handler = session.handler
            suspends = session.connection.server.suspends
            session.lanes = LanePool(
                session.router,
                lambda lane: self._make_session(lane, handler, batches=False, suspends=suspends),
                self.sessions.spawn,
                keep=_SESSION_LANES,
                most=_SESSION_LANES_MOST,
            )
        return session.lanes

    def _one_shot(self, router: Router, handler: RequestHandler, *, batches: bool) -> Lane:
        """A lane for one POST only (its Session is started by `_answer`)."""
        return Lane(router, lambda lane: self._make_session(lane, handler, batches=batches), reusable=False)

    def _make_session(
        self,
        lane: Lane,
        handler: RequestHandler,
        *,
        batches: bool,
        suspends: Callable[[Request], bool] | None = None,
    ) -> Session:
        made = Session(lane.transport, request_handler=handler, batches=batches, options=self._lane_options)
        made.suspends = suspends
        return made

    def _route(self, session: HttpSession, message: MessageLike) -> None:
        """Hand a client notification or response on (a notification's room reserved by `_route_all`)."""
        if message.kind in ("result", "error"):
            shared = self.sessions.shared
            if not session.router.response(message) and shared is not None:
                shared.publish(session, one_line(message.raw))  # another instance asked: it answers there
        elif message.method == protocol.NOTIFICATIONS_CANCELLED:
            shared = self.sessions.shared
            params = message.params
            rid = params.get("requestId") if isinstance(params, dict) else None
            if shared is None or not shared.publish_cancel(session, rid, one_line(message.raw)):
                session.router.cancelled(message)
        else:
            session.transport.notify_now(one_line(message.raw))

    async def _modern(self, request: HttpRequest, body: Body, accepts: Accepts) -> Answer:
        message = body.requests[0]
        why = mirror_mismatch(request.headers, message.method or "", message.params)
        if why is not None:
            return error_response(400, why, code=jsonrpc.HEADER_MISMATCH, rid=message.id)
        ids = [message.id] if message.id is not None else []
        if message.method == protocol.SUBSCRIPTIONS_LISTEN:
            # not admitted: a listen stream lives as long as its client listens and runs no handler
            conn = self.connect()
            lane = self._one_shot(Router(), conn.handle_request, batches=False)
            exchange = Exchange(lane, Stream(None, None), ids)  # runs with its connection bound
            return await self._answer(
                exchange, body, None, accepts, headers={}, runner=conn.run, receive=request.receive
            )
        slot = await self._admit(request, body)
        if isinstance(slot, Reply):
            return slot
        try:
            conn = self.connect()
            lane = self.stateless_lanes().acquire()
            lane.handler = conn.handle_request
            conn.bind(lane.session)  # what `conn.run` does, minus its pump (only a listen needs it)
            exchange = Exchange(lane, Stream(None, None), ids)
            exchange.on_close += (conn.close, slot.release)
            return await self._answer(exchange, body, None, accepts, headers={}, receive=request.receive)
        except BaseException:
            slot.release()
            raise

    async def _stateless_legacy(self, request: HttpRequest, data: bytes, accepts: Accepts) -> Answer:
        """`HttpOptions(stateless=True)`: a handshake-era POST served alone, as the official SDK's
        `stateless_http`: a fresh connection taken as initialized at the request's `MCP-Protocol-Version`
        (`initialize` is answered and forgotten), no `Mcp-Session-Id`, notifications and responses 202."""
        header = request.headers.get(MCP_PROTOCOL_VERSION, "")
        version = header if header in protocol.LEGACY_VERSIONS else protocol.LATEST_LEGACY
        body = Body.decode(data, max_frame=self._lane_options.max_frame, batches=False)
        refusal = body.refusal
        if refusal is not None:
            return refusal
        if body.modern:
            return await self._modern(request, body, accepts)
        if not body.requests:
            return Reply(202)  # nobody to route a notification or a response to
        slot = await self._admit(request, body)
        if isinstance(slot, Reply):
            return slot
        try:
            conn = self.connect()
            if not body.initialize:
                conn.version = version
                conn.initialized = True
            lane = self.stateless_lanes().acquire()
            lane.handler = conn.handle_request
            conn.bind(lane.session)
            ids = [r.id for r in body.requests if r.id is not None]
            exchange = Exchange(lane, Stream(None, None), ids)
            exchange.on_close += (conn.close, slot.release)
            return await self._answer(exchange, body, None, accepts, headers={}, receive=request.receive)
        except BaseException:
            slot.release()
            raise

    def stateless_lanes(self) -> LanePool:
        """The pool of lanes of 2026-07-28 requests (made by the first one)."""
        if self._stateless is None:
            self._stateless = LanePool(
                Router(),
                lambda lane: self._make_session(lane, lane.handle, batches=False),
                self.sessions.spawn,
                keep=_STATELESS_LANES,
            )
        return self._stateless

    async def _answer(
        self,
        exchange: Exchange,
        body: Body,
        session: HttpSession | None,
        accepts: Accepts,
        *,
        headers: dict[str, str],
        runner: Callable[[Session], Awaitable[None]] | None = None,
        receive: Receive | None = None,
    ) -> Answer:
        """Run the exchange; answer JSON if only responses came, else switch to SSE."""
        exchange.stream.for_client(sse=accepts.sse)  # before its handlers run (`respond` attaches for SSE)
        self.start(exchange, body, session, runner)
        return await self.respond(exchange, session, accepts, headers, receive=receive)

    def start(
        self,
        exchange: Exchange,
        body: Body,
        session: HttpSession | None,
        runner: Callable[[Session], Awaitable[None]] | None = None,
    ) -> None:
        """Hand the POST's requests to the exchange's lane (its first step runs now on the direct path)."""
        stream = exchange.stream
        if session is not None:  # first: a direct answer may close the exchange before the next line
            exchange.on_close.append(lambda: session.stream_ended(stream))
        if self._direct(exchange, body):
            start_inline(exchange.session, body.requests[0], exchange.answer)
        else:
            exchange.transport.feed(body.session_input())  # before anything routed to it can arrive
        if exchange.lane.pool is None:  # a one-shot lane: pooled ones are already running
            self.sessions.spawn(exchange.lane.run, runner)

    def answered(
        self, exchange: Exchange, session: HttpSession | None, accepts: Accepts, headers: dict[str, str]
    ) -> Reply | None:
        """The answer `respond` would give, when it can be given whole right now: the stream finished (every
        request answered) and its events, if it is SSE, need no waiting to be stored (`finished_body`)."""
        stream = exchange.stream
        if not stream.finished.is_set():
            return None
        priming = self.replies.priming(session)
        if not self.answers_sse(accepts, session, priming):
            reply = self._json_ready(exchange, session, accepts, headers)
            if reply is not None:
                return reply
        body = stream.finished_body(retry_ms=priming)
        if body is None:
            return None
        if session is not None:  # what the SSE reply's end does (`StreamReplies.reply`)
            session.touch()
            session.stream_ended(stream)
        return Reply(200, body, {**SSE_HEADERS, **headers})

    async def respond(
        self,
        exchange: Exchange,
        session: HttpSession | None,
        accepts: Accepts,
        headers: dict[str, str],
        *,
        receive: Receive | None = None,
    ) -> Answer:
        """The answer of a started exchange: JSON once only responses came, else SSE.

        With the POST's ASGI `receive`, a client that leaves while the answer is awaited as JSON has the
        exchange aborted at once (its handlers cancelled once): nobody can ever receive that answer, and
        no event id that would resume it was handed out. Without it (the lean server's fast path), the
        exchange runs on and its answer is dropped.

        With `close_idle_streams`, a quiet SSE answer closes once the POST has been quiet that long (one
        window from the last event, as `HttpOptions` says): when the wait for a JSON answer ran out with
        nothing coming, the SSE response's first quiet wait is what is left of the window."""
        ready = self.answered(exchange, session, accepts, headers)
        if ready is not None:
            return ready
        stream = exchange.stream
        spawn = self.sessions.spawn
        priming = self.replies.priming(session)
        held = 0.0  # seconds the POST already waited with nothing coming
        if not self.answers_sse(accepts, session, priming):
            answered = await self._json_answer(exchange, session, accepts, headers, receive)
            if answered is not None:
                return answered
            waited = self.json_wait(accepts)
            # not finished (else answered) and no message: the wait ran out (here, or on the lean server's
            # `fast_pending.Pending`, which hands over to `respond` when it does)
            if not stream.saw_other and waited != math.inf:
                held = waited
        pipe = await stream.attach(retry_ms=priming)
        close_idle = self.options.close_idle_streams if priming is not None else None
        first_wait = None
        if close_idle is not None and held and not stream.saw_other:
            first_wait = max(close_idle - held, 0.0)

        def ended() -> None:
            if not stream.resumable and not stream.finished.is_set():
                spawn(exchange.abort)  # nobody can ever receive the answer

        return self.replies.reply(
            session, stream, pipe, close_idle=close_idle, on_end=ended, headers=headers, first_wait=first_wait
        )

    async def _json_answer(
        self,
        exchange: Exchange,
        session: HttpSession | None,
        accepts: Accepts,
        headers: dict[str, str],
        receive: Receive | None,
    ) -> Reply | None:
        """Wait for the answer (up to `json_wait`); `None` when it has to be SSE after all.

        What else ends the wait is on one entry of the loop's shared timer at a time (`Deadlines`, not a
        `call_later` per POST: ~28k instructions): at `json_wait` seconds (`stream_after`) the answer
        switches to SSE (`stream.wake`); a client that leaves has the exchange aborted (nobody can receive
        the answer, and no event id to resume it was handed out), its end ending the wait. The client is
        watched only from `_LEAVING_AFTER` seconds into the wait (`_watch_leaving`), so the many answers
        that come sooner pay no watcher (on uvicorn a task: ~60k instructions per POST).
        """
        stream = exchange.stream
        event = stream.wake if accepts.sse else stream.finished  # wake: a frame that is not a response
        if not event.is_set():  # on the direct path most answers are in before we get here: no timer
            wait = self.json_wait(accepts)
            held: list[Any] = [None, None]  # the current `Deadlines` entry, what stops watching the client
            if receive is None or wait <= _LEAVING_AFTER:  # (an SSE reply, soon, watches the client)
                held[0] = None if wait == math.inf else Deadlines.of(wait).add(stream.wake.set)
            else:
                watch = partial(self._watch_leaving, exchange, wait, receive, held)
                held[0] = Deadlines.of(_LEAVING_AFTER).add(watch)
            try:
                await event.wait()
            finally:
                if held[0] is not None:
                    held[0][1] = None
                if held[1] is not None:
                    held[1]()
        return self._json_ready(exchange, session, accepts, headers)

    def _watch_leaving(self, exchange: Exchange, wait: float, receive: Receive, held: list[Any]) -> None:
        """`_LEAVING_AFTER` seconds into a JSON wait: watch the client (aborting the exchange if it leaves),
        and time the rest of the wait."""
        held[1] = watch_disconnect(receive, partial(self.sessions.spawn, exchange.abort))
        rest = wait - _LEAVING_AFTER
        held[0] = None if rest == math.inf else Deadlines.of(rest).add(exchange.stream.wake.set)

    @staticmethod
    def _json_ready(
        exchange: Exchange, session: HttpSession | None, accepts: Accepts, headers: dict[str, str]
    ) -> Reply | None:
        """The JSON answer of a finished stream (`None`: not finished, or it must be SSE)."""
        stream = exchange.stream
        if not stream.finished.is_set() or (stream.saw_other and accepts.sse):
            return None
        frames = stream.response_frames()
        if session is not None:
            session.stream_ended(stream)  # answered in full: nothing to resume
        if not frames:  # cancelled, or its session ended
            return unanswered(session, exchange.request_ids, accepts.sse, headers)
        joined = frames[0] if len(frames) == 1 else b"[" + b",".join(frames) + b"]"
        return json_response(joined, headers)

    @staticmethod
    def _direct(exchange: Exchange, body: Body) -> bool:
        """Whether the POST's one request may skip its lane Session's reader (`session.inline`).

        The common case: one request (not a batch, not `initialize`) with no progress token, on a lane
        whose Session is already running. Only the way in and the answer's way out change: the lane's
        Session still carries what the handler sends (logs, sampling, elicitation) and the client's
        cancel, and the answer goes to the same `Stream` (stored there when resumable), so a handler that
        sends something switches the answer to SSE exactly as on the full path.
        """
        if body.batch or len(body.requests) != 1 or body.initialize:
            return False
        if not exchange.lane.reused:
            return False
        params = body.requests[0].params
        meta = params.get("_meta") if isinstance(params, dict) else None
        return not (isinstance(meta, dict) and protocol.PROGRESS_TOKEN in meta)

    def answers_sse(
        self, accepts: Accepts, session: HttpSession | None, priming: int | EllipsisType | None = ...
    ) -> bool:
        """Whether a POST carrying requests is answered with SSE from the start (else JSON, unless the
        handlers send something first or stay quiet `json_wait`). `priming`, when the caller has it already:
        `replies.priming(session)`, else asked here only where it counts (the resumable mode)."""
        if not accepts.sse:
            return False
        if not accepts.json:  # it accepts SSE and not JSON: SSE in any mode, it could not read a JSON answer
            return True
        mode = self.options.response_mode
        if mode != "resumable":
            return mode == "sse"
        if priming is ...:
            priming = self.replies.priming(session)
        return priming is not None

    def switch_deadlines(self, loop: asyncio.AbstractEventLoop | None) -> Deadlines | None:
        """`loop`'s timeouts of `json_wait` for a client that takes SSE (`None`: it never switches),
        kept in `switch_after` (the options are frozen: the wait never changes). `loop` `None`: the
        running one."""
        if loop is None:
            loop = asyncio.get_running_loop()
        wait = self.json_wait(Accepts(json=True, sse=True))
        found = None if wait == math.inf else Deadlines.of(wait, loop)
        self.switch_after = (loop, found)
        return found

    def json_wait(self, accepts: Accepts) -> float:
        """How long to hold a POST for a plain JSON answer before switching to SSE."""
        if not accepts.sse:
            return math.inf
        wait = self.options.stream_after
        if self.options.close_idle_streams is not None:
            wait = min(wait, self.options.close_idle_streams)
        return wait


def refusal_of(headers: dict[str, str], accepts: Accepts) -> Reply | None:
    """The refusal of a POST with the wrong media types (`Content-Type`, `Accept`), else `None`."""
    if not is_json_content(headers.get("content-type")):
        return error_response(415, "Unsupported Media Type: the body must be application/json")
    if not (accepts.json or accepts.sse):
        return error_response(406, "Not Acceptable: accept application/json or text/event-stream")
    return None


def _too_many_sessions() -> Reply:
    return error_response(503, "Service Unavailable: too many sessions", headers={"Retry-After": "1"})


def _queued(message: MessageLike) -> bool:
    """Whether `_route` queues `message` for the session's notification handlers (a bounded queue)."""
    return message.kind == "notification" and message.method != protocol.NOTIFICATIONS_CANCELLED


def _busy_ids(session: HttpSession, body: Body) -> Reply | None:
    """The refusal of a POST reusing the id of a request that is still being answered."""
    busy = [r.id for r in body.requests if r.id is not None and session.router.busy(r.id)]
    if not busy:
        return None
    return error_response(400, f"Bad Request: request id {busy[0]!r} is already in flight", rid=busy[0])


def _too_big(limit: int) -> Reply:
    return error_response(413, f"Payload Too Large: the body exceeds {limit} bytes")
