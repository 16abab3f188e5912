"""The listening proxy's hot POST on the lean HTTP server: one request in a running session, its bytes
written to the session's child where the POST was parsed, the child's answer written back as the response.

The lean server (`mcpframe.http.wire`) offers every complete POST to the app's `wire_fast` before it builds
an ASGI scope; `ListenServer.wire_fast` checks Host/Origin and `MCP-Protocol-Version` with the host's own
functions and hands the POST here. `FastPosts.post` takes it when every one of these holds, else it
declines (`None`) with nothing started, and the full path (`BridgePosts`) answers it as before:

- Content-Type and Accept are right (`refusal_of`) and the body is within `max_body`;
- `Mcp-Session-Id` names a live session whose child answered `initialize` (`SessionManager.find`, no
  shared store), its child runs and the request id is not in flight there;
- the body is one request (the core's lazy decoder validates it as the full path's decoder does, and
  builds no Python value for its params): not a batch, a notification, a response or `initialize`, and
  names no progress token (`core.value_span` looks for it in the bytes);
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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import Id
from mcpframe.http.asgi import Receive, Send
from mcpframe.http.deadlines import Deadlines
from mcpframe.http.events import store_now
from mcpframe.http.fast import answering, media_accepts
from mcpframe.http.headers import MCP_SESSION_ID, Accepts
from mcpframe.http.post import one_line
from mcpframe.http.responses import Reply, error_response
from mcpframe.http.streams import format_event, new_stream_id
from mcpframe.http.wire import Parked, WireAnswer
from mcpframe.http.wire_parts import Later, Whole

from .listen_bridge import FastRoute, Route, SessionBridge, cancel_frame
from .reader import odd_id

if TYPE_CHECKING:
    from mcpframe.http.sessions import HttpSession

    from .listen_posts import BridgePosts

__all__ = ["SSE_HOLD", "FastPosts"]

logger = logging.getLogger("mcpframe.proxy")


def _priming(event_id: str, retry_ms: int) -> bytes:
    """The priming event (`Stream.attach` writes the same): the id to resume from, the retry hint."""
    return b"id: %s\nretry: %d\ndata: \n\n" % (event_id.encode(), retry_ms)


_Plan = tuple[str | None, bool, bool, Callable[[str, str, bytes | None], str] | None, int | None]
"""What the fast path decides once per session and version (`FastPosts._plan`): the version it was made
for, whether a client that takes SSE gets it, whether its events can be stored at once (no store, or the
memory store), the store's `store_now` (`None`: none) and the priming event's `retry` (`None`: none)."""

_Request = tuple[Id, str, bytes]
"""The fast path's request (`_plain`): its id, its method and its bytes."""

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
        """Write the POST's request to its child and return what finishes the answer, or `None`."""
        try:
            return self._post(headers, data)
        except Exception as exc:  # as on the full path: a bug costs this request, answered
            return self.failed(exc)

    def failed(self, exc: Exception) -> Whole:
        """The 500 answer of a POST whose handling failed (logged)."""
        logger.exception("POST %s failed", self.posts.options.path)
        why = f"Internal error: handling this POST failed ({type(exc).__name__})"
        reply = error_response(500, why, code=jsonrpc.INTERNAL_ERROR)
        return reply.status, reply.header_lines(), reply.body

    def _post(self, headers: dict[str, str], data: bytes) -> WireAnswer | None:
        posts = self.posts
        accepts = media_accepts(headers, self._media_ok)
        if accepts is None or len(data) > self.max_body:
            return None
        found = self._in_session(headers, data)
        if found is None:
            return None
        session, bridge, (rid, method, raw) = found
        hold, sse = self._hold(session, bridge, accepts)
        if hold is None:
            return None
        assert bridge.child is not None
        slot = posts.admission.try_enter(1, ping=method == protocol.PING)
        if slot is None:
            return None
        parked = _Parked(self, accepts, sse)
        route = parked.route = FastRoute(bridge, session, rid, slot.release, finish=parked.finish)
        bridge.pending[rid] = route  # before the write: no answer can come before its request is known
        if not bridge.child.write_now(one_line(raw)):
            del bridge.pending[rid]
            slot.release()
            return None
        session.touch(+1)  # an HTTP request open: the reaper leaves the session alone
        self.taken += 1
        if hold != math.inf:  # on the loop's one timer for holds of that length, not a timer per POST
            # (the session's loop, given: asking for the running one costs a `getpid` on 3.11)
            parked.hold = Deadlines.of(hold, session.loop).add(parked.expire)
        return parked

    def _in_session(
        self, headers: dict[str, str], data: bytes
    ) -> tuple[HttpSession, SessionBridge, _Request] | None:
        """The session, its bridge and the request of a POST the fast path takes, else `None`."""
        posts = self.posts
        if MCP_SESSION_ID not in headers or posts.sessions.shared is not None:
            return None
        # refused there: an unknown session, and a `MCP-Protocol-Version` that has none (2026-07-28)
        session = posts.sessions.find(headers, None)
        if isinstance(session, Reply):
            return None
        bridge = session.connection  # what answered `initialize` (`session.version` is its `version`)
        if not isinstance(bridge, SessionBridge) or bridge.version is None:
            return None
        if bridge.child is None or bridge.ended:
            return None
        request = _plain(core.decode(data, max_frame=posts.max_frame, batches=True, lazy=True))
        if request is None or request[0] in bridge.pending:
            return None
        return session, bridge, request

    def _hold(
        self, session: HttpSession, bridge: SessionBridge, accepts: Accepts
    ) -> tuple[float | None, bool]:
        """How long the POST may wait for a whole answer, and whether that answer is SSE; `None`: not here
        (an SSE answer whose events could not be stored at once)."""
        if not accepts.sse:
            return math.inf, False
        _, prefers, storable, _, _ = self._plan(session, bridge)
        if prefers or not accepts.json:  # one that takes SSE alone gets it in any mode
            return (self.sse_hold if storable else None), True
        return self.json_hold, False

    def _plan(self, session: HttpSession, bridge: SessionBridge) -> _Plan:
        """The session's `_Plan`, made once per negotiated version (its bridge keeps it)."""
        plan: _Plan | None = bridge.fast_plan
        version = bridge.version
        if plan is None or plan[0] != version:
            posts = self.posts
            retry = posts.replies.priming(session)
            store = store_now(session.store)
            storable = store is not None or session.store is None
            plan = bridge.fast_plan = (version, posts.prefers_sse(retry), storable, store, retry)
        return plan

    def _cancel_upstream(self, route: FastRoute) -> None:
        """Tell the child to stop working on a request nobody waits for (as `SessionBridge.abandon` does on
        the full path): at once when its stdin is free, else behind the writes under way."""
        bridge = route.bridge
        child = bridge.child
        frame = cancel_frame(route.rid, "the HTTP request was cancelled")
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
        _, _, _, store, retry = self._plan(session, bridge)
        if store is None or session.closed:  # nothing to store (as `Stream.finished_body` without a
            # store; a dead child's events were dropped): no ids
            return 200, bridge.sse_lines, format_event(frame)
        # the events as `Stream.finished_body` stores and writes them: the priming event first (resuming
        # from its id replays the answer), then the answer
        stream_id = new_stream_id()
        head = b"" if retry is None else _priming(store(session.id, stream_id, None), retry)
        return 200, bridge.sse_lines, head + format_event(frame, store(session.id, stream_id, frame))


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
        route.session.touch(-1)
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


_TOKEN = ("params", "_meta", protocol.PROGRESS_TOKEN)
_TOKEN_KEY = protocol.PROGRESS_TOKEN.encode()


def _plain(items: list[core.Message | core.FrameError]) -> _Request | None:
    """The id, method and bytes of the one request of a body that holds nothing else, is not `initialize`,
    names no progress token and has an id written as its encoding writes it (`odd_id`); else `None` (a
    refusal included: the full path gives it). Each member is read once: every read of a core message's
    member is a call into the extension (`raw` a new copy)."""
    if len(items) != 1:
        return None
    request = items[0]
    if isinstance(request, core.FrameError) or request.kind != "request" or request.batch is not None:
        return None
    rid, method = request.id, request.method
    if rid is None or method is None or method == protocol.INITIALIZE:  # (a request has a method)
        return None
    raw = request.raw
    # the key can be nowhere, not even escaped (`find`: `in` first tries the needle as an int, and the
    # TypeError it makes and drops costs more than the search)
    if raw.find(_TOKEN_KEY) < 0 and raw.find(b"\\") < 0 and raw.find(b"-0") < 0:
        return rid, method, raw
    if odd_id(request) is not None:
        return None  # the full path gives the client its id's bytes back (the child writes its own)
    return None if core.value_span(raw, _TOKEN) is not None else (rid, method, raw)
