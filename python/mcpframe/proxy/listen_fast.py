"""The listening proxy's hot POST on the lean HTTP server: one request in a running session, its bytes
written to the session's child where the POST was parsed, the child's answer written back as the response.

The lean server (`mcpframe.http.wire`) offers every complete POST to the app's `wire_fast` before it builds
an ASGI scope; `ListenServer.wire_fast` checks Host/Origin and `MCP-Protocol-Version` with the host's own
functions and hands the POST here. `FastPosts.post` takes it when every one of these holds, else it
declines (`None`) with nothing started, and the full path (`BridgePosts`) answers it as before:

- Content-Type and Accept are right (`refusal_of`) and the body is within `max_body`;
- `Mcp-Session-Id` names a live session whose child answered `initialize` (`SessionManager.find`, no
  shared store), its child runs and the request id is not in flight there;
- the body is one request (`core.plain_call` validates it as the full path's decoder does, in one call
  that builds no message, only the id, the method and the line for the child): not a batch, a
  notification, a response or `initialize`, names no progress token, and has an id written as its
  encoding writes it (no escape, not `-0`: the full path gives the client its id's own bytes back);
- the admission bound has room without queueing, and the child's stdin takes the bytes at once
  (`Child.write_now`: no other write under way, nothing left unwritten in the pipe).

The body's bytes go to the child as they came (the child is the session's alone, so its ids are the
client's: nothing to rewrite, as on the full path). The request waits in the bridge's map as a
`FastRoute`, its POST parked on the lean server (`wire.Parked`: no task, no future): its answer is handed
to the POST as bytes where the child's pipe read lands (`SessionBridge._take`, `ChildOutput`) and written
there, to the client's socket, as the whole response, JSON, or for a
client that prefers SSE (the default `resumable` mode with a 2025-11-25 client) the priming event and
the answer event, both stored in the memory event store first, as the direct server's fast path does.
What needs more than that answer continues on the full path, exactly as there (the `FastRoute` is
upgraded to a `Route` with a stream, `SessionBridge._target`): a notification or request of the child
while the request is the newest one waiting (progress, logging, sampling, elicitation, roots/list), or
an answer that takes longer than the request's hold, after which an SSE response is opened as the full
path opens it. The hold is `SSE_HOLD` when SSE is preferred, `stream_after` (the full path's own wait
for JSON) for a client that takes either in `--response-mode auto`, and none for one that takes JSON only.

What it saves per call: the ASGI scope and messages, the body read, the params decoded into Python
values, the `Stream`, the `Route`, the SSE pipe and its task, the two loop trips of the anyio write to the
child, and the task (and its loop turns) that would wait for the answer.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import Id
from mcpframe.http.asgi import Receive, Send
from mcpframe.http.deadlines import Deadlines
from mcpframe.http.events import MemoryEventStore, store_now
from mcpframe.http.fast import answering, media_accepts
from mcpframe.http.headers import MCP_PROTOCOL_VERSION, MCP_SESSION_ID, Accepts
from mcpframe.http.responses import Reply, error_response
from mcpframe.http.streams import format_event, new_stream_id
from mcpframe.http.wire import Parked, WireAnswer
from mcpframe.http.wire_parts import Later, Whole
from mcpframe.protocol import LEGACY_VERSIONS

from .listen_bridge import FastRoute, Route, SessionBridge, cancel_frame

if TYPE_CHECKING:
    from mcpframe.http.sessions import HttpSession

    from .listen_posts import BridgePosts

__all__ = ["SSE_HOLD", "FastPosts"]

logger = logging.getLogger("mcpframe.proxy")


def _priming(event_id: str, retry_ms: int) -> bytes:
    """The priming event (`Stream.attach` writes the same): the id to resume from, the retry hint."""
    return b"id: %s\nretry: %d\ndata: \n\n" % (event_id.encode(), retry_ms)


_Plan = tuple[str | None, bool, float | None, "Deadlines | None", MemoryEventStore | None, int | None]
"""What the fast path decides once per session and version (`FastPosts._plan`), for a client that takes SSE:
the version it was made for, whether such a client gets SSE, how long its POST may wait for a whole answer
(`None`: not taken, an SSE answer whose events could not be stored at once), the `Deadlines` of that hold,
the memory store the events go to (`None`: none) and the priming event's `retry` (`None`: none)."""

_Request = tuple[Id, str, bytes]
"""The fast path's request (`core.plain_call`): its id, its method and its bytes as one line."""

SSE_HOLD = 0.05
"""Seconds a POST whose client prefers SSE waits for its answer before its SSE response is opened (then
the answer follows on it, as on the full path). Within it the priming event and the answer go out
together; a client that drops the connection meanwhile has no event id to resume from."""


class FastPosts:
    """The fast path of one `ListenServer` (see the module doc); a hold runs out on the loop's shared
    timer for holds of its length (`Deadlines`)."""

    def __init__(self, posts: BridgePosts) -> None:
        self.posts = posts
        close_idle = posts.options.close_idle_streams
        self.sse_hold = SSE_HOLD if close_idle is None else min(SSE_HOLD, close_idle / 2)
        self.json_hold = posts.json_wait(Accepts(json=True, sse=True))  # a client that takes either
        self.max_body = posts.options.max_body
        self.taken = 0  # POSTs the fast path took (tests and benchmarks read it)
        # (Content-Type, Accept) pairs `refusal_of` let through, and their parse (`media_accepts`)
        self._media_ok: dict[tuple[str | None, str | None], Accepts] = {}

    def post(self, headers: dict[str, str], data: bytes) -> WireAnswer | None:
        """Write the POST's request to its child and return what finishes the answer, or `None`. (Two
        functions for the whole check: each Python call costs a forwarded request as much as a check.)"""
        try:
            found = self._found(headers, data)
            if found is None:
                return None
            session, bridge, accepts, (rid, method, line) = found
            deadlines: Deadlines | None = None
            sse = False
            if accepts.sse:
                plan = bridge.fast_plan
                if plan is None or plan[0] != bridge.version:
                    plan = self._plan(session, bridge)
                _, sse, hold, deadlines, memory, _ = plan
                if not sse and not accepts.json:  # one that takes SSE alone gets it in any mode
                    sse = True
                    hold = self.sse_hold if (memory is not None or session.store is None) else None
                    deadlines = None if hold is None else Deadlines.of(hold, session.loop)
                if hold is None:
                    return None
            slot = self.posts.admission.try_enter(1, ping=method == protocol.PING)
            if slot is None:
                return None
            parked = _Parked(self, accepts, sse)
            route = parked.route = FastRoute(bridge, session, rid, slot.release, finish=parked.finish)
            bridge.pending[rid] = route  # before the write: no answer can come before its request is known
            # a session over the shared child (`--multiplex shared`) gives it an id of its own there
            child = bridge.child  # (`_found`: it runs)
            written = bridge.send_now(rid, method, line) if bridge.spliced else child.write_now(line)  # type: ignore[union-attr]
            if not written:
                del bridge.pending[rid]
                slot.release()
                return None
            # an HTTP request open: the reaper leaves the session alone (`HttpSession.touch`, whose time
            # the answer sets: while a request is open the session is not idle)
            session.open_requests += 1
            self.taken += 1
            if deadlines is not None:  # on the loop's one timer for holds of that length, not one per POST
                parked.hold = deadlines.add(parked.expire)
            return parked
        except Exception as exc:  # as on the full path: a bug costs this request, answered
            return self.failed(exc)

    def _found(
        self, headers: dict[str, str], data: bytes
    ) -> tuple[HttpSession, SessionBridge, Accepts, _Request] | None:
        """The session, its bridge, what the POST accepts and its request, when the fast path may take
        it (its child runs, the request id is not in flight there), else `None`."""
        posts = self.posts
        accepts = media_accepts(headers, self._media_ok)
        session_id = headers.get(MCP_SESSION_ID)
        if accepts is None or len(data) > self.max_body or session_id is None or posts.sessions.shared:
            return None
        # as `SessionManager.find` finds it, declining where it refuses (an unknown session; a
        # `MCP-Protocol-Version` that has none: 2026-07-28)
        session = posts.sessions.sessions.get(session_id)
        version = headers.get(MCP_PROTOCOL_VERSION)
        if (
            session is None
            or session.closed
            or session.owner is not None
            or (version is not None and version not in LEGACY_VERSIONS)
        ):
            return None
        bridge = session.connection  # what answered `initialize` (`session.version` is its `version`)
        if (
            not isinstance(bridge, SessionBridge)
            or bridge.version is None
            or bridge.child is None
            or bridge.ended
        ):
            return None
        # the request, its bytes as one line: what the full path would give the child unchanged (see
        # `core.plain_call`; anything else, an odd id or a progress token to rewrite included, is the full
        # path's)
        request = core.plain_call(data, posts.max_frame)
        if request is None or request[0] in bridge.pending:
            return None
        return session, bridge, accepts, request

    def failed(self, exc: Exception) -> Whole:
        """The 500 answer of a POST whose handling failed (logged)."""
        logger.exception("POST %s failed", self.posts.options.path)
        why = f"Internal error: handling this POST failed ({type(exc).__name__})"
        reply = error_response(500, why, code=jsonrpc.INTERNAL_ERROR)
        return reply.status, reply.header_lines(), reply.body

    def _plan(self, session: HttpSession, bridge: SessionBridge) -> _Plan:
        """The session's `_Plan`, made once per negotiated version (its bridge keeps it)."""
        posts = self.posts
        retry = posts.replies.priming(session)
        store = session.store
        memory = store if isinstance(store, MemoryEventStore) and store_now(store) is not None else None
        prefers = posts.prefers_sse(retry)
        hold: float | None = self.json_hold
        if prefers:  # an SSE answer whose events cannot be stored at once is not the fast path's
            hold = self.sse_hold if (memory is not None or store is None) else None
        # the session's loop, given: asking for the running one costs a `getpid` on 3.11
        deadlines = None if hold is None or hold == math.inf else Deadlines.of(hold, session.loop)
        plan: _Plan = (bridge.version, prefers, hold, deadlines, memory, retry)
        bridge.fast_plan = plan
        return plan

    def _cancel_upstream(self, route: FastRoute) -> None:
        """Tell the child to stop working on a request nobody waits for (as `SessionBridge.abandon` does on
        the full path): at once when its stdin is free, else behind the writes under way."""
        bridge = route.bridge
        child = bridge.child
        rid = bridge.unmap(route.rid) if bridge.spliced else route.rid  # the child's id of it
        if rid is None:
            return
        frame = cancel_frame(rid, "the HTTP request was cancelled")
        if child is None or bridge.ended or child.write_now(frame):
            return
        try:
            self.posts.sessions.spawn(bridge.write, frame)
        except RuntimeError:  # the host's task group is gone (shutdown): the child ends with it
            logger.debug("request %r given up without telling the child", route.rid)

    def _whole(self, route: FastRoute, frame: bytes | None, sse: bool, accepts_sse: bool) -> Whole:
        """The response to a request whose answer is `frame` (`None`: cancelled, nothing to answer): what
        `BridgePosts.answer` would give once the stream finished, its header lines made once per session
        (`SessionBridge.attach`; the session was touched just before: `_Parked.finish`)."""
        bridge, session = route.bridge, route.session
        if frame is None:  # not 202 for a request's POST (`no_answer`): an SSE stream with nothing in it
            return (200, bridge.sse_lines, b"") if accepts_sse else (202, bridge.id_line, b"")
        if not sse:
            return 200, bridge.json_lines, frame.rstrip(b"\n")
        plan = bridge.fast_plan
        if plan is None:  # (made when the POST was taken, unless the session was re-planned meanwhile)
            plan = self._plan(session, bridge)
        store, retry = plan[4], plan[5]
        if store is None or session.closed:  # nothing to store (as `Stream.finished_body` without a
            # store; a dead child's events were dropped): no ids
            return 200, bridge.sse_lines, format_event(frame)
        # the events as `Stream.finished_body` stores and writes them: the priming event first (resuming
        # from its id replays the answer), then the answer (event ids `<stream>.<sequence>`: events.py)
        stream_id = new_stream_id()
        data = frame.rstrip(b"\r\n")
        if retry is None or data.find(b"\r") >= 0:  # (`format_event` splits such data over lines)
            head = b"" if retry is None else _priming(store.store_now(session.id, stream_id, None), retry)
            return (
                200,
                bridge.sse_lines,
                head + format_event(frame, store.store_now(session.id, stream_id, frame)),
            )
        seq = store.store_answer_now(session.id, stream_id, frame)
        name = stream_id.encode()
        body = _EVENTS % (name, seq, retry, name, seq + 1, data)
        return 200, bridge.sse_lines, body


_EVENTS = b"id: %s.%d\nretry: %d\ndata: \n\nid: %s.%d\nevent: message\ndata: %s\n\n"
"""A priming event and an answer's event (`_priming`, `format_event`), formatted at once."""


class _Parked(Parked):
    """A taken POST parked on the lean server until its `FastRoute` is finished (see the module doc)."""

    __slots__ = ("accepts", "fast", "hold", "route", "sse")

    route: FastRoute

    def __init__(self, fast: FastPosts, accepts: Accepts, sse: bool) -> None:
        super().__init__()
        self.fast = fast
        self.accepts = accepts
        self.sse = sse
        self.hold: list[Any] | None = None  # the `Deadlines` entry of a finite hold

    def expire(self) -> None:
        """The hold ran out (`Deadlines`): a request still waiting is upgraded (its SSE response opens)."""
        self.hold = None
        if self.route.waiting():
            self.route.upgrade()

    def _unhold(self) -> None:
        hold = self.hold
        if hold is not None:
            hold[1] = None  # cancelled: the timer skips it
            self.hold = None

    def finish(self, got: bytes | Route | None) -> None:
        """The route's end (`FastRoute.finish`): the whole response once the child's answer is in, else
        (upgraded) the full path's answer."""
        fast, route = self.fast, self.route
        hold = self.hold  # (`_unhold`, inlined: this runs for every answer)
        if hold is not None:
            hold[1] = None
            self.hold = None
        session = route.session  # (`HttpSession.touch(-1)`, inlined)
        session.open_requests -= 1
        session.last_active = session.loop.time()
        if isinstance(got, Route):
            self.deliver(self._full(got))
            return
        route.slot_release()
        try:
            whole = fast._whole(route, got, self.sse, self.accepts.sse)
        except Exception as exc:  # as on the full path: a bug costs this request, answered
            whole = fast.failed(exc)
        self.deliver(whole)

    def _full(self, got: Route) -> Later:
        posts, route, accepts = self.fast.posts, self.route, self.accepts
        session = route.session
        headers = {MCP_SESSION_ID: session.id}

        async def full(receive: Receive, send: Send) -> Whole | None:
            late = not got.stream.saw_other  # upgraded when its hold ran out, not by the child's message
            held = (self.fast.sse_hold if self.sse else self.fast.json_hold) if late else 0.0
            answer = await answering(
                "POST",
                posts.options.path,
                posts.answer(
                    got, session, accepts, headers, route.bridge, late=late, held=held, receive=receive
                ),
            )
            if isinstance(answer, Reply):
                return answer.status, answer.header_lines(), answer.body
            await answer(receive, send)
            return None

        return full

    def cancel(self) -> None:
        """The lean server closes (shutdown) or the client left before the answer came: the request is
        given up, its slot freed, the child told (an answer already on its way finishes the route as
        usual, its delivery dropped)."""
        route = self.route
        if route.done:
            return
        route.done = True
        self._unhold()
        route.session.touch(-1)
        if route.bridge.forget(route):
            self.fast._cancel_upstream(route)
        route.slot_release()
