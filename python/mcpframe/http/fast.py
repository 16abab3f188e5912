"""The hot POST without the ASGI layers: one request, answered where it was parsed.

Most POSTs a client makes carry one request (`tools/call`, `resources/read`...) in a session that runs, or
one 2026-07-28 request. For those the lean HTTP server (`wire.py`) asks `StreamableHTTPServer.wire_fast`
first, with the request's raw headers and its whole body, before building an ASGI scope. The checks are
the full path's own functions (`HostGuard.check`, the version check, `refusal_of`, the body limit,
`SessionManager.find`, the core's `decode`, `mirror_mismatch`, the busy-id and admission rules); the request
is then started the way the full path's direct path starts it (`PostHandler.start`: a pooled lane, an
`Exchange`, `session.inline`, the handler's first step run eagerly). When the answer is in at once it is
the same `Reply` the full path would build (`PostHandler.answered`), written by the wire server in one
piece. A JSON answer that comes later is that same `Reply` too, handed to the wire server by the code that
ends the exchange, with no task waiting for it and no `Stream` unless one is needed (`Pending`); an
answer preferred as SSE is written by the code that emits its events (`sse_wire.SseWriter`, when the event
store answers at once); what needs more (a switch to SSE, or SSE with an event store that makes it wait:
`_started`) goes on in a task, through the rest of the full path (`PostHandler.respond`) on the exchange
already started, so a handler that suspends and then logs, reports progress or asks the client something
is answered exactly as before.

What is not the common case is not taken here (`None`: the wire server runs the full ASGI path, which
answers it, refusals included): a refusal of any kind, `auth`, a batch, a notification or response,
`initialize`, a progress token, `subscriptions/listen`; in a session also a shared store, stateless
serving or an id in flight; and no room without queueing, or no idle lane. Deciding that costs a header
dict and, for a body that is not one plain request, one decode the full path repeats.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from types import EllipsisType
from typing import TYPE_CHECKING

from mcpframe import core, protocol
from mcpframe._api import Id, MessageLike
from mcpframe.session.inline import start_inline

from .events import MemoryEventStore, store_now
from .exchange import Exchange, Lane
from .fast_pending import STATELESS_LINES, Pending, answering, failed, json_lines, later
from .handling import PostHandler, refusal_of
from .headers import FIRST_STATELESS, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, Accepts, mirror_mismatch
from .post import Body
from .responses import Answer, Reply
from .sessions import naming
from .sse_wire import sse_lines
from .streams import answer_events
from .wire_parts import Parked, Streamed, Whole, WireAnswer

if TYPE_CHECKING:
    from mcpframe.server.connection import ServerConnection

    from .sessions import HttpSession

__all__ = ["FastAnswer", "answering", "fast_post", "media_accepts", "wire_answer"]

logger = logging.getLogger("mcpframe.http")

FastAnswer = Reply | Whole | Parked | Streamed | Callable[[], Awaitable[Answer]]
"""A complete `Reply` (or, for a JSON answer given at once, the `Whole` it would be written as), the
`Parked` JSON answer of a request that suspended, the SSE answer of one that suspended where SSE is
preferred (`sse_wire.SseWriter`), or the coroutine function that finishes the answer of a request already
started."""

# (Content-Type, Accept) pairs `refusal_of` let through, with what the Accept allows: a client sends the
# same two with every request, and parsing them each time measured ~6k instructions per call
_MEDIA_OK: dict[tuple[str | None, str | None], Accepts] = {}
_REMEMBERED = 256  # at most this many pairs: a client varying them only costs the parse again
_MEDIA_LONGEST = 256  # a longer value is parsed every time, never kept (a head may be 64 KiB)


def media_accepts(
    headers: dict[str, str], remembered: dict[tuple[str | None, str | None], Accepts]
) -> Accepts | None:
    """What the POST accepts, `None` if its media types are refused (`refusal_of`); a pair let through is
    kept in `remembered` while it has room, if both values are short: junk values must not fill it."""
    media = (headers.get("content-type"), headers.get("accept"))
    accepts = remembered.get(media)
    if accepts is None:
        accepts = Accepts.parse(media[1])
        if refusal_of(headers, accepts) is not None:
            return None
        if len(remembered) < _REMEMBERED and all(v is None or len(v) <= _MEDIA_LONGEST for v in media):
            remembered[media] = accepts
    return accepts


def wire_answer(posts: PostHandler, headers: dict[str, str], data: bytes) -> WireAnswer | None:
    """`fast_post` for the lean server (`StreamableHTTPServer.wire_fast`): its `Reply` as a `Whole`, what
    finishes it as a `Later` (or a `Parked` JSON answer), a failure as the 500 the full path gives."""
    try:
        answer = fast_post(posts, headers, data)
    except Exception as exc:  # as on the full path: a bug costs this request, answered
        logger.exception("POST %s failed", posts.options.path)
        answer = failed(exc)
    if answer is None or isinstance(answer, tuple | Parked | Streamed):
        return answer
    if isinstance(answer, Reply):
        return answer.status, answer.header_lines(), answer.body
    return later(posts, answer)


def fast_post(posts: PostHandler, headers: dict[str, str], data: bytes) -> FastAnswer | None:
    """Start the POST `headers` + `data` (Host, Origin and version already checked) if it is the common
    case (see the module doc); `None` otherwise, with nothing started."""
    accepts = media_accepts(headers, _MEDIA_OK)
    if accepts is None:
        return None
    options = posts.options
    if len(data) > options.max_body:
        return None
    if protocol.at_least(headers.get(MCP_PROTOCOL_VERSION, ""), FIRST_STATELESS):
        return _stateless(posts, headers, accepts, data)
    return _session_post(posts, headers, accepts, data)


def _session_post(
    posts: PostHandler, headers: dict[str, str], accepts: Accepts, data: bytes
) -> FastAnswer | None:
    """A handshake-era request in a running session: started on one of its idle lanes (see the module doc)."""
    found = _in_session(posts, headers, data)
    if found is None:
        return None
    session, request = found
    slot = posts.admission.try_enter(1, ping=request.method == protocol.PING)
    if slot is None:
        return None
    lane = posts.lanes(session).take_idle()
    if lane is None:
        slot.release()
        return None
    session.touch()
    assert request.id is not None
    # the priming `retry`, asked once: what decides SSE in the resumable mode, and what its answer primes with
    resumable = accepts.sse and posts.options.response_mode == "resumable"
    retry = posts.replies.priming(session) if resumable else ...
    sse = posts.answers_sse(accepts, session, retry)
    store = session.store  # (`type(...) is MemoryEventStore`: `store_now`'s answer for the default store)
    if not sse or store is None or type(store) is MemoryEventStore or store_now(store) is not None:
        try:
            return _handover(
                posts, lane, session, request, ends=(slot.release,), accepts=accepts, sse=sse, retry=retry
            )
        except BaseException:  # (`_stateless_start` alike) its room back: `release` is idempotent
            slot.release()
            raise
    headers = {MCP_SESSION_ID: session.id}  # a store that makes SSE answers wait: the full path's way
    exchange = Exchange(lane, session.new_stream(), [request.id])
    exchange.on_close.append(slot.release)
    return _started(
        posts, exchange, Body([request], False, [request]), session, accepts=accepts, headers=headers
    )


def _handover(
    posts: PostHandler,
    lane: Lane,
    session: HttpSession | None,
    request: MessageLike,
    *,
    ends: tuple[Callable[[], None], ...],
    accepts: Accepts,
    sse: bool = False,
    retry: int | EllipsisType | None = ...,
) -> FastAnswer:
    """A JSON answer with no `Exchange` or `Stream` when the handler answers in its first step (`sse`: the
    SSE answer, when the session's event store, if any, stores at once: `_sse_whole`).

    The handler is started as `PostHandler.start` starts it (`start_inline`: its Request in the lane
    Session, its host task, a copy of the context) before any exchange exists. If it answered in that step
    it sent nothing else: `answer_inline` waits for the lane Session's writes (`_flush`), and those go
    through the Session's writer task, so anything sent makes the step suspend. The answer is then what
    `PostHandler._json_ready` would build, as the `Whole` it is written as (its header lines built once per
    session, `json_lines`), and what the exchange's end would do is done here (`ends`, then
    the lane back to its pool). Else (it suspended, was queued, or gave no answer) the exchange is made at
    once, before the loop runs anything that could write to the lane or route to the request's id (a
    client's cancel, the answer to a request of the handler), and the handler's answer goes to it, to be
    answered as `PostHandler.respond` would: for JSON a `Pending` exchange (no stream until one is
    needed), with `sse` a full one written by `sse_wire.SseWriter`. A handler that surely suspends (a `def`
    tool: `Session.suspends`) was given a task of its own that has not run yet: its first step (the hand-over
    to the worker thread) runs as soon as the wire server holds the answer (`first_step`: `Parked.park`,
    `SseWriter.opened`), in this loop iteration rather than the next. (A closure
    rather than an object: this runs once per request, and an object measured ~2k instructions more per
    call.)
    `retry`: the session's `posts.replies.priming(session)` when the caller asked for it (else `...`).
    """
    rid = request.id
    assert rid is not None
    answers: list[bytes] = []
    exchange: Pending | None = None

    async def deliver(rid: Id, frame: bytes) -> None:
        if exchange is None:
            answers.append(frame)
        elif not exchange.answer_now(frame):  # (no coroutine for the common case: no stream was made)
            await exchange.answer(rid, frame)

    waiting = start_inline(lane.session, request, deliver)
    if answers:
        for end in ends:
            end()
        lane.done()
        if sse:
            return _sse_whole(posts, session, answers[0], retry)
        return 200, STATELESS_LINES if session is None else json_lines(session), answers[0]
    # a `Pending` answer, its stream made only if something else comes: JSON (`parked`), or with `sse` its
    # light `SseWriter` (the answer alone written with the head and the end, the stream made only if
    # something else must go out first, or when the head's hold runs out)
    pending = exchange = Pending(posts, lane, session, rid, accepts, sse=sse, retry=retry)
    pending.on_close += ends
    if pending.writer is not None:
        pending.writer.first_step = waiting
        return pending.writer
    pending.parked.first_step = waiting
    return pending.parked


def _sse_whole(
    posts: PostHandler, session: HttpSession | None, frame: bytes, retry: int | EllipsisType | None = ...
) -> Whole:
    """The SSE answer of a request answered in its first step, as `PostHandler.answered` gives it (the
    priming event if the session primes, then the answer, both stored when resumable), on a stream that
    exists only in the event store: nothing is left to resume it but a replay (`Last-Event-ID`)."""
    if session is None:
        return 200, sse_lines(None), answer_events(None, None, frame, None)
    if retry is ...:
        retry = posts.replies.priming(session)
    body = answer_events(session.store, session.id, frame, retry)
    return 200, sse_lines(session.id), body


def _in_session(
    posts: PostHandler, headers: dict[str, str], data: bytes
) -> tuple[HttpSession, MessageLike] | None:
    """The session and the one request of a handshake-era POST the fast path takes, else `None`."""
    if posts.options.stateless or MCP_SESSION_ID not in headers or posts.sessions.shared is not None:
        return None
    session = posts.sessions.find(headers, None)
    if isinstance(session, Reply) or (version := session.version) is None:
        return None
    request = _one_request(data, posts.max_frame, protocol.batches_allowed(version), modern=False)
    if request is None:
        return None
    rid = request.id
    return None if rid is None or session.router.busy(rid) else (session, request)


def _stateless(
    posts: PostHandler, headers: dict[str, str], accepts: Accepts, data: bytes
) -> FastAnswer | None:
    """A 2026-07-28 request, as `PostHandler._modern` runs it: a connection of its own on a pooled
    stateless lane (not `subscriptions/listen`, which runs no handler and lives as long as its client)."""
    request = _one_request(data, posts.max_frame, False, modern=True)
    if request is None:
        return None
    if request.method == protocol.SUBSCRIPTIONS_LISTEN or request.id is None:
        return None
    if mirror_mismatch(headers, request.method or "", request.params) is not None:
        return None
    return _stateless_start(posts, request, accepts)


def _stateless_start(posts: PostHandler, request: MessageLike, accepts: Accepts) -> FastAnswer | None:
    """Admit and start a 2026-07-28 request `_stateless` takes, on an idle stateless lane."""
    assert request.id is not None
    slot = posts.admission.try_enter(1, ping=request.method == protocol.PING)
    if slot is None:
        return None
    lane = posts.stateless_lanes().take_idle()
    if lane is None:
        slot.release()
        return None
    try:
        lane.handler = _connection(posts, lane).handle_request
        sse = posts.answers_sse(accepts, None)
        return _handover(posts, lane, None, request, ends=(slot.release,), accepts=accepts, sse=sse)
    except BaseException:
        slot.release()
        lane.reusable = False  # its state is unknown: it ends (its exchange with it), not back to the pool
        lane.transport.end()  # (its connection closed as it ends: `Lane.run`)
        raise


def _connection(posts: PostHandler, lane: Lane) -> ServerConnection:
    """The lane's connection of the MCP server, made and bound by the first request the fast path starts
    on it and kept while the lane runs (`Lane.connection`, closed as it ends).

    A 2026-07-28 request keeps nothing on its connection that the next one could see: its version,
    capabilities and log level travel in each request's `_meta` (a `CallInfo` per request), its tasks are
    the server's (`MODERN_OWNER`), and `subscriptions/listen`, the one request that lives on its
    connection, is never taken here. A connection per request (made, tracked, bound, closed: its loop token,
    the server's set of connections, the task manager's walk) measured ~20k instructions per call. A
    connection that was closed meanwhile (the server closing its connections) is replaced."""
    conn = lane.connection
    if conn is None or conn.closed:
        conn = lane.connection = posts.connect()
        _bind(conn, lane)
    return conn


def _bind(conn: ServerConnection, lane: Lane) -> None:
    """`conn.bind(lane.session)` from the wire server's `data_received`, where no task runs: anyio learns
    which library runs the loop from sniffio, which finds no task to ask there (only a loop started by
    `anyio.run` names it in the context). The lean server runs on asyncio only, so it names asyncio for the
    call (`sessions.naming`): the connection gets its loop token however the loop was started (plain
    `asyncio.run` too)."""
    naming("asyncio", conn.bind, lane.session)


def _started(
    posts: PostHandler,
    exchange: Exchange,
    body: Body,
    session: HttpSession | None,
    *,
    accepts: Accepts,
    headers: dict[str, str],
) -> FastAnswer:
    """Start the exchange; its whole answer if it is in, else what finishes it."""
    posts.start(exchange, body, session)
    reply = posts.answered(exchange, session, accepts, headers)
    if reply is not None:
        return reply
    # SSE is preferred here and the store makes it wait (`_session_post`): no `SseWriter`, as the store
    # cannot give the priming event at once (`Stream.attach_now`)
    return lambda: posts.respond(exchange, session, accepts, headers)


def _one_request(data: bytes, max_frame: int, batches: bool, *, modern: bool) -> MessageLike | None:
    """The body's one request if it is plain: not in a batch, not `initialize`, no progress token, and of
    the era asked (`modern`: its `_meta` names a protocol version, as `Body.modern` tells), else `None`.
    (What `Body.decode` and its checks tell of such a body, without sorting it into a `Body`.)"""
    items = core.decode(data, max_frame=max_frame, batches=batches)
    if len(items) != 1:
        return None
    request = items[0]
    if isinstance(request, core.FrameError) or request.kind != "request" or request.batch is not None:
        return None
    if request.method == protocol.INITIALIZE:
        return None
    params = request.params
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return None if modern else request
    if protocol.PROGRESS_TOKEN in meta:
        return None
    return request if (protocol.PROTOCOL_VERSION_KEY in meta) == modern else None
