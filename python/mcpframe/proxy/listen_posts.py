"""POST to the listening proxy's endpoint: the host's checks, then the body's frames written to a child.

The same refusals as `mcpframe.http.handling.PostHandler` (media types, body limit, unknown session, a
request id already in flight, the admission bound), then: an `initialize` without a session gets a new
child from the pool and a new HTTP session; notifications and responses are written to the session's
child (202); requests are registered with the session's `SessionBridge` and written, and the POST is
answered with plain JSON when only responses came within `stream_after`, else with an SSE stream (the
host's `Stream`, resumable when the host has an event store). 2026-07-28 requests (no session) go to the
shared stateless upstream (`listen_stateless`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from mcpframe import jsonrpc, protocol
from mcpframe.http.admission import Admission, Slot
from mcpframe.http.asgi import ClientDisconnect, HttpRequest, Receive, TooLarge, TooSlow, watch_disconnect
from mcpframe.http.deadlines import Deadlines
from mcpframe.http.headers import (
    FIRST_STATELESS,
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    Accepts,
    is_json_content,
)
from mcpframe.http.options import HttpOptions
from mcpframe.http.post import Body
from mcpframe.http.responses import (
    SSE_HEADERS,
    Answer,
    Reply,
    StreamReplies,
    error_response,
    json_response,
    no_answer,
    too_slow,
)
from mcpframe.http.sessions import HttpSession, SessionManager

from .listen_bridge import Route, SessionBridge, progress_tokens
from .listen_shared import SharedStartError, SharedUpstream
from .listen_shared_session import SharedBridge
from .pool import ChildPool, PoolBusy

if TYPE_CHECKING:
    from .listen_stateless import StatelessBridge

__all__ = ["BridgePosts"]

_WATCH_AFTER = 0.25
"""Seconds into a JSON wait from which the client is watched (`PostHandler`'s `_LEAVING_AFTER`: on uvicorn a
watcher is a task, ~50k instructions per POST)."""


class BridgePosts:
    """What a POST to the proxy's endpoint goes through (the host's `PostHandler`, for a bridge)."""

    def __init__(
        self,
        options: HttpOptions,
        *,
        sessions: SessionManager,
        admission: Admission,
        replies: StreamReplies,
        pool: ChildPool,
        stateless: StatelessBridge | None,
        shared: SharedUpstream | None = None,
    ) -> None:
        self.options = options
        self.sessions = sessions
        self.admission = admission
        self.replies = replies
        self.pool = pool
        self.stateless = stateless
        self.shared = shared  # `--multiplex shared`: every session over this child (`listen_shared`)
        self.max_frame = options.lane_options().max_frame

    async def handle(self, request: HttpRequest, owner: str | None) -> Answer:
        """Check the request and its body, then answer with 202, JSON or SSE."""
        accepts = Accepts.parse(request.headers.get("accept"))
        checked = await self._checked(request, accepts, owner)
        if isinstance(checked, Reply):
            return checked
        body, session, modern = checked
        if body.modern and session is None:
            if self.stateless is None:
                return error_response(400, "Bad Request: this proxy serves no 2026-07-28 requests")
            return await self.stateless.handle(request, body, accepts, self)
        if modern and not body.requests:
            return Reply(202)  # a stateless client's notification: nothing to route it to
        if session is None:
            return await self._initialize(request, body, accepts, owner)
        return await self._in_session(request, body, accepts, session)

    async def _checked(
        self, request: HttpRequest, accepts: Accepts, owner: str | None
    ) -> tuple[Body, HttpSession | None, bool] | Reply:
        """The decoded body, the session it names and whether it is 2026-07-28, or the refusal."""
        data = await self._read(request, accepts)
        if isinstance(data, Reply):
            return data
        modern = protocol.at_least(request.headers.get(MCP_PROTOCOL_VERSION, ""), FIRST_STATELESS)
        session: HttpSession | None = None
        if not modern and MCP_SESSION_ID in request.headers:
            found = self.sessions.find(request.headers, owner)
            if isinstance(found, Reply):
                return found
            session = found
        # a batch only where the child negotiated 2025-03-26, as the host (and the child) would take it
        batches = session is not None and protocol.batches_allowed(session.version)
        body = Body.decode(data, max_frame=self.max_frame, batches=batches)
        refusal = body.refusal  # as the host's
        if refusal is not None:
            return refusal
        return body, session, modern

    async def _read(self, request: HttpRequest, accepts: Accepts) -> bytes | Reply:
        refusal = self._refusal(request, accepts)
        if refusal is not None:
            return refusal
        limit = self.options.max_body
        try:
            return await request.body(limit, self.options.body_timeout)
        except TooLarge:
            return _too_big(limit)
        except TooSlow:  # a slow-loris body: 408 and the connection closed, as the host's `PostHandler`
            return too_slow(self.options.body_timeout)
        except ClientDisconnect:
            return Reply(400)

    def _refusal(self, request: HttpRequest, accepts: Accepts) -> Reply | None:
        """The refusal of a wrong media type, or of a body its Content-Length says is too big."""
        if not is_json_content(request.headers.get("content-type")):
            return error_response(415, "Unsupported Media Type: the body must be application/json")
        if not (accepts.json or accepts.sse):
            return error_response(406, "Not Acceptable: accept application/json or text/event-stream")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.options.max_body:
            return _too_big(self.options.max_body)
        return None

    async def admit(self, request: HttpRequest, body: Body) -> Slot | Reply:
        """Room for the POST's requests under the host's `max_in_flight`, or the 503 refusing it."""
        ping = all(r.method == protocol.PING for r in body.requests)
        got = await self.admission.enter(len(body.requests), request.receive, ping=ping)
        if isinstance(got, Slot):
            return got
        if got == "gone":
            return Reply(400)
        why = f"Service Unavailable: {self.admission.max_in_flight} requests in flight; retry after 1 s"
        return error_response(503, why, code=jsonrpc.INTERNAL_ERROR, headers={"Retry-After": "1"})

    async def _initialize(
        self, request: HttpRequest, body: Body, accepts: Accepts, owner: str | None
    ) -> Answer:
        if not body.initialize:
            return error_response(400, "Bad Request: the Mcp-Session-Id header is required")
        if self.sessions.full():
            return error_response(503, "Service Unavailable: too many sessions")
        if self.shared is not None:
            return await self._initialize_shared(request, body, accepts, owner)
        try:
            child = await self.pool.spawn()
        except PoolBusy as exc:
            return error_response(503, f"Service Unavailable: {exc}", headers={"Retry-After": "1"})
        except OSError as exc:
            why = f"Bad Gateway: the upstream server could not start ({exc})"
            return error_response(502, why, code=jsonrpc.INTERNAL_ERROR, rid=body.requests[0].id)
        session = self.sessions.create(owner)
        bridge = session.connection
        assert isinstance(bridge, SessionBridge)
        bridge.attach(session, child)
        response = await self._in_session(request, body, accepts, session)
        if isinstance(response, Reply) and session.version is None:
            await self.sessions.end(session)  # initialize failed (answered with an error): no session
            response.headers.pop(MCP_SESSION_ID.lower(), None)
        return response

    async def _initialize_shared(
        self, request: HttpRequest, body: Body, accepts: Accepts, owner: str | None
    ) -> Answer:
        """A new session over the shared child (`--multiplex shared`): its `initialize` answered here, from
        the child's (`listen_shared`)."""
        assert self.shared is not None
        message = body.requests[0]
        try:
            await self.shared.ready()
        except PoolBusy as exc:
            return error_response(503, f"Service Unavailable: {exc}", headers={"Retry-After": "1"})
        except SharedStartError as exc:
            return error_response(502, f"Bad Gateway: {exc}", code=jsonrpc.INTERNAL_ERROR, rid=message.id)
        session = self.sessions.create(owner)
        bridge = session.connection
        assert isinstance(bridge, SharedBridge)
        bridge.join(session)
        stream = session.new_stream()
        assert message.id is not None
        route = Route(stream, [message.id], [])
        route.on_close.append(lambda: session.stream_ended(stream))
        await stream.emit(bridge.initialize_answer(message), response=True)
        route.answered(message.id)
        headers = {MCP_SESSION_ID: session.id}
        return await self.answer(route, session, accepts, headers, bridge, patient=True)

    async def _in_session(
        self, request: HttpRequest, body: Body, accepts: Accepts, session: HttpSession
    ) -> Answer:
        bridge = session.connection
        assert isinstance(bridge, SessionBridge)
        session.touch()
        refusal = await self._pass_others(bridge, body)
        if refusal is not None:
            return refusal
        busy = [r.id for r in body.requests if r.id is not None and r.id in bridge.pending]
        if busy:
            why = f"Bad Request: request id {busy[0]!r} is already in flight"
            return error_response(400, why, rid=busy[0])
        session.touch(+1)
        try:
            slot = await self.admit(request, body)
        finally:
            session.touch(-1)
        if isinstance(slot, Reply):
            return slot
        stream = session.new_stream()
        if not accepts.sse:
            stream.for_client(sse=False)  # what it can never receive (a log, progress) is not kept for it
        route = Route(
            stream, [r.id for r in body.requests if r.id is not None], progress_tokens(body.requests)
        )
        route.on_close += (slot.release, lambda: session.stream_ended(stream))
        bridge.add(route, body.requests)
        for frame in body.error_frames():  # the invalid parts of a batch are answered at once
            await stream.emit(frame, response=True)
        if not await bridge.send(route, body.requests):
            route.close()
            return _ended()
        # An initialize is answered as JSON however long a starting child takes, unless the child sends
        # something first: the session id it carries may only be kept once the child accepted.
        patient = body.initialize and session.version is None
        headers = {MCP_SESSION_ID: session.id}
        return await self.answer(
            route, session, accepts, headers, bridge, patient=patient, receive=request.receive
        )

    @staticmethod
    async def _pass_others(bridge: SessionBridge, body: Body) -> Reply | None:
        """Write the body's notifications and responses to the child; the reply when nothing more is to do."""
        others = bridge.outgoing(body.others)
        if others and not await bridge.write(others):
            return _ended()
        if body.requests:
            return None
        if body.errors:
            return json_response(b"[" + b",".join(body.error_frames()) + b"]")
        return Reply(202)

    async def answer(
        self,
        route: Route,
        session: HttpSession | None,
        accepts: Accepts,
        headers: dict[str, str],
        bridge: Any,
        *,
        patient: bool = False,
        late: bool = False,
        held: float = 0.0,
        receive: Receive | None = None,
    ) -> Answer:
        """Plain JSON when only responses came (within `stream_after`, or at all if `patient`), else SSE.
        `late`: the POST has already waited `stream_after` (`listen_fast`), so a client that takes SSE gets
        it now; `held`: the seconds it waited with nothing coming (its hold there).

        With the POST's ASGI `receive`, a client that leaves while its answer is awaited as JSON has its
        requests abandoned at once (`bridge.abandon`: cancelled at the child): nobody can receive that
        answer, and no event id that would resume it was handed out. Not while `patient` (an initialize).

        With `--sse-close-idle` a quiet SSE answer is closed once the POST, not the SSE response, has been
        quiet that long: the response's first wait is shortened by what the POST already waited."""
        stream = route.stream
        priming = self.replies.priming(session)
        # a client that takes SSE and not JSON gets SSE in any mode (as `PostHandler.answers_sse`); a held
        # initialize still waits for the child's answer, then comes whole (`_json_answer`)
        if not (accepts.sse and (late or not accepts.json or self.prefers_sse(priming))) or patient:
            leaving = None if patient else partial(self.sessions.spawn, bridge.abandon, route)
            answered = await self._json_answer(
                route, session, accepts, headers, patient=patient, receive=receive, leaving=leaving
            )
            if answered is not None:
                return answered
            waited = self.json_wait(accepts, patient=patient)
            if not stream.saw_other and waited != math.inf:  # the wait ran out with nothing coming
                held += waited
        pipe = await stream.attach(retry_ms=priming)
        close_idle = self.options.close_idle_streams if priming is not None else None
        first_wait = None
        if close_idle is not None and held and not stream.saw_other:
            first_wait = max(close_idle - held, 0.0)

        def ended() -> None:
            if not stream.resumable and not stream.finished.is_set():
                self.sessions.spawn(bridge.abandon, route)  # nobody can ever receive the answers

        return self.replies.reply(
            session,
            stream,
            pipe,
            close_idle=close_idle,
            on_end=ended,
            headers=headers,
            first_wait=first_wait,
        )

    def prefers_sse(self, priming: int | None) -> bool:
        """Whether a client that takes SSE gets it (the response mode, and `priming` of its session)."""
        mode = self.options.response_mode
        return mode == "sse" or (mode == "resumable" and priming is not None)

    def json_wait(self, accepts: Accepts, *, patient: bool = False) -> float:
        """How long a POST waits for a plain JSON answer before its SSE response opens (`math.inf`: until
        the answer, or something that needs SSE, comes)."""
        if not accepts.sse:
            return math.inf
        close_idle = self.options.close_idle_streams
        wait = math.inf if patient else self.options.stream_after
        return wait if close_idle is None else min(wait, close_idle)

    async def _json_answer(
        self,
        route: Route,
        session: HttpSession | None,
        accepts: Accepts,
        headers: dict[str, str],
        *,
        patient: bool = False,
        receive: Receive | None = None,
        leaving: Callable[[], object] | None = None,
    ) -> Reply | None:
        stream = route.stream
        event = stream.wake if accepts.sse else stream.finished
        if not event.is_set():
            wait = self.json_wait(accepts, patient=patient)
            # on the loop's one timer for waits of that length (`Deadlines`), not a timer per POST
            entry = None if wait == math.inf else Deadlines.of(wait).add(stream.wake.set)
            # a client that leaves calls `leaving` (which ends the stream, so the wait); watched only from
            # `_WATCH_AFTER` seconds into the wait, so the many answers that come sooner pay no watcher
            unwatch: list[Callable[[], object]] = []
            start = None
            if receive is not None and leaving is not None and wait > _WATCH_AFTER:
                start = Deadlines.of(_WATCH_AFTER).add(
                    lambda: unwatch.append(watch_disconnect(receive, leaving))
                )
            try:
                await event.wait()
            finally:
                if entry is not None:
                    entry[1] = None
                if start is not None:
                    start[1] = None
                for stop in unwatch:
                    stop()
        if not stream.finished.is_set() or (stream.saw_other and accepts.sse):
            return None
        return self._finished(route, session, accepts, headers)

    def _finished(
        self, route: Route, session: HttpSession | None, accepts: Accepts, headers: dict[str, str]
    ) -> Reply | None:
        """The whole answer of a finished stream awaited as JSON (`None`: its SSE response replays it)."""
        stream = route.stream
        if not accepts.json:  # held for a client that takes SSE alone: the finished stream, as SSE
            body = stream.finished_body(retry_ms=self.replies.priming(session))
            if body is None:
                return None  # its events need waiting to be stored: the SSE response replays them
            if session is not None:
                session.stream_ended(stream)
            return Reply(200, body, {**SSE_HEADERS, **headers})
        frames = stream.response_frames()
        if session is not None:
            session.stream_ended(stream)
        if not frames and session is not None and session.closed and route.ids:
            # its session ended (DELETE, shutdown) before the bridge answered what it still waits for
            bridge = session.connection
            assert isinstance(bridge, SessionBridge)
            frames = [bridge.failed(rid).rstrip(b"\n") for rid in route.ids]
        if not frames:  # cancelled
            return no_answer(accepts.sse, headers)
        joined = frames[0] if len(frames) == 1 else b"[" + b",".join(frames) + b"]"
        return json_response(joined, headers)


def _too_big(limit: int) -> Reply:
    return error_response(413, f"Payload Too Large: the body exceeds {limit} bytes")


def _ended() -> Reply:
    return error_response(
        404,
        "Not Found: the session ended (its upstream server exited); initialize again",
        code=jsonrpc.INVALID_REQUEST,
    )
