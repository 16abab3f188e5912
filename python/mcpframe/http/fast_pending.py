"""The JSON answer of a fast POST whose handler suspended (`fast._handover`): `Pending`, an `Exchange` that
makes its `Stream` only when something other than the answer must go out, and the `Parked` answer the
lean server waits on (`_Abandoned`); with what `fast.py` shares with it (the error answers, `later`, the
header lines of a JSON answer). Split from `fast.py`, which decides and starts the fast POST.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import EllipsisType
from typing import TYPE_CHECKING, Any, TypeVar

from mcpframe import jsonrpc
from mcpframe._api import Id
from mcpframe._unstable.asyncio_tasks import step_now

from .asgi import Receive, Send
from .deadlines import Deadlines
from .events import store_now
from .exchange import Exchange, Lane
from .headers import MCP_SESSION_ID, Accepts
from .responses import Answer, Reply, error_response, json_response, unanswered
from .sse_wire import SseWriter, light_writer
from .store import StoreUnavailable
from .streams import Stream, answer_events, events_now, format_event, new_stream_id
from .wire_parts import GIVEN_UP, Later, Parked, Whole

if TYPE_CHECKING:
    from .handling import PostHandler
    from .sessions import HttpSession

__all__ = ["STATELESS_LINES", "Pending", "answering", "failed", "json_lines", "later"]

logger = logging.getLogger("mcpframe.http")
_T = TypeVar("_T")

STATELESS_LINES = json_response(b"").header_lines()  # a JSON answer's header lines with no session


def failed(exc: Exception) -> Reply:
    """The 500 answering a POST whose handling failed with `exc` (logged by the caller)."""
    why = f"Internal error: handling this POST failed ({type(exc).__name__})"
    return error_response(500, why, code=jsonrpc.INTERNAL_ERROR)


def later(posts: PostHandler, rest: Callable[[], Awaitable[Answer]]) -> Later:
    """The `Later` that finishes a started answer (`rest`): whole if it is a `Reply`, else on ASGI."""

    async def finish(receive: Receive, send: Send) -> Whole | None:
        reply = await answering("POST", posts.options.path, rest())
        if isinstance(reply, Reply):
            return reply.status, reply.header_lines(), reply.body
        await reply(receive, send)
        return None

    return finish


async def answering(method: str, path: object, routed: Awaitable[_T]) -> _T | Reply:
    """`routed`'s answer; a failure becomes the error answer (a bug costs one request, never the server)."""
    try:
        return await routed
    except StoreUnavailable as exc:  # Redis down or slow: this request fails, the server stays
        logger.warning("%s %s: %s", method, path, exc)
        retry = {"Retry-After": "1"}
        return error_response(503, f"Service Unavailable: {exc}", code=jsonrpc.INTERNAL_ERROR, headers=retry)
    except Exception as exc:
        logger.exception("%s %s failed", method, path)
        why = f"Internal error: handling this {method} failed ({type(exc).__name__})"
        return error_response(500, why, code=jsonrpc.INTERNAL_ERROR)


class Pending(Exchange):
    """The exchange of a handed-over request that suspended, whose client takes its answer as JSON: the
    answer is given with no task waiting for it, and no `Stream` unless something else must go out.

    In the common case the handler's next steps send nothing but the answer: `answer` then gives the JSON
    answer (`PostHandler._json_ready`'s, as the `Whole` it is written as) to the wire server's `Parked`
    (`parked`) from the code that answered (the handler's task), and ends the exchange (`close`). A
    cancel from the client, the session's end or a stop's -32000 end it the same way (the answer or a 202,
    as a finished stream would give). Only what needs a stream makes one (`stream`, on first use): a frame
    that is not the answer (the handler logs, reports progress or asks the client something: the lane
    writes it to `outgoing`), or `stream_after` seconds with no answer (`_expired`). From then on it is
    what `_handover` made before: the stream told what its client takes, its wake-up (`Stream.on_wake`)
    giving the answer once it finishes (`_woken`), or the rest to `PostHandler.respond` (a `Later`, in a
    task of the wire server's) when the answer must be SSE. A client that leaves first has the exchange
    aborted (`_Abandoned`), as `respond` does.

    With `sse` (the client takes SSE and the session prefers it) the answer is written by a light
    `SseWriter` (`writer`, the wire server's `Streamed` answer; `parked` is not used): the answer alone is
    put on it with its priming event, stored first when resumable (`_sse_end`), and written with the head
    and the end in one piece. Something else to send first, or the writer's hold running out (`_streamed`),
    makes the stream, with the writer attached to it at once (no `stream_after` deadline, no `_woken`),
    from then on as `_handover` made it before: the writer takes the stream's events, priming first.
    """

    def __init__(
        self,
        posts: PostHandler,
        lane: Lane,
        session: HttpSession | None,
        rid: Id,
        accepts: Accepts,
        *,
        sse: bool = False,
        retry: int | EllipsisType | None = ...,
    ) -> None:
        # what can fail comes before `_register`: a failure here leaves nothing registered (the lane not
        # taken, no id owned), and the deadline is armed last, once the exchange is whole
        self._stream: Stream | None = None
        self._posts = posts
        self._session = session
        self._accepts = accepts
        self._frame: bytes | None = None  # the answer, given before any stream was made
        self._deadline: list[Any] | None = None
        # `sse`: the answer preferred as SSE, written by a light `SseWriter` (the wire server's `Streamed`
        # answer, not `parked`, which it then has none of): no deadline here, its own hold makes the stream
        # when it runs out
        self.writer: SseWriter | None = None
        # the session's priming `retry` (`ReplyOptions.priming`), asked once per SSE answer: its writer,
        # its end (`_sse_end`) and its stream, if one is made, all prime with it
        self._retry: int | None = None
        deadlines: Deadlines | None = None
        if sse:
            if retry is ...:  # (else the caller asked already: `fast._session_post`)
                retry = posts.replies.priming(session)
            self._retry = retry
            self.writer = light_writer(posts, session, retry, self._light_ended)
            self.writer.light = self._streamed
        else:
            self.parked = _Abandoned(posts, self)
            if accepts.sse:  # (`json_wait`: a client that takes JSON only waits as long as it takes)
                # one entry on the loop's shared timer (the sessions' loop, known: no lookup), kept by
                # `posts` for that loop
                loop = posts.sessions.loop
                known, deadlines = posts.switch_after
                if known is not loop:
                    deadlines = posts.switch_deadlines(loop)
        self._register(lane, [rid], batch=False)
        if session is not None:  # an open request: the idle reaper leaves its session alone until it ends
            # (`touch(+1)` less the time: `_session_post` stamped it just now); `touch(-1)` as it ends:
            # `close`, or with a stream the `on_close` callback `_upgrade` adds
            session.open_requests += 1
        if deadlines is not None:
            self._deadline = deadlines.add(self._expired)

    @property
    def stream(self) -> Stream:
        """The exchange's stream, made on first use (see the class doc)."""
        stream = self._stream
        return stream if stream is not None else self._upgrade()

    @stream.setter
    def stream(self, stream: Stream) -> None:
        self._stream = stream

    def _upgrade(self) -> Stream:
        """The stream `_handover` makes for a full exchange, told what the client takes before its first
        frame, its wake-up giving the answer (`_woken`)."""
        session = self._session
        if self.closed or session is None:
            stream = Stream(None, None)
            if self.closed:  # nothing can come any more (asked for after the end: nothing to route)
                stream.finish()
        else:
            stream = session.new_stream()
            # the end `close` gives an exchange with no stream (`touch(-1)`), now `Exchange.close`'s
            self.on_close.insert(0, lambda: session.touch(-1))
            self.on_close.append(lambda: session.stream_ended(stream))
        self._stream = stream
        stream.for_client(sse=self._accepts.sse)
        writer = self.writer
        if writer is None:
            stream.on_wake = self._woken
        elif not self.closed:  # (closed: the writer ended with it)
            first = stream.attach_now(writer, retry_ms=self._retry)
            if first is None:  # not met on the fast path (its store answers at once): nobody would end it
                logger.error(
                    "POST %s: an SSE answer's stream could not be attached", self._posts.options.path
                )
                writer.close()
            else:
                writer.attached(stream, first)
        return stream

    def _light_ended(self) -> None:
        """The light writer's end (`sse_wire.light_writer`): a client that left an answer nobody can resume
        (no stream and no store, or a stream not resumable and not finished) has the exchange aborted."""
        writer = self.writer
        stream = None if writer is None else writer.stream
        if stream is None:
            session = self._session
            if (session is None or session.store is None) and not self.closed:
                self._posts.sessions.spawn(self.abort)
        elif not stream.resumable and not stream.finished.is_set():
            self._posts.sessions.spawn(self.abort)

    def _streamed(self) -> None:
        """The light writer's hold ran out: its stream from now on (`_upgrade`)."""
        if self._stream is None:
            self._upgrade()

    async def answer(self, rid: Id, frame: bytes) -> None:
        """The handler's answer: straight to the client, unless a stream was made (then `Exchange`'s)."""
        if not self.answer_now(frame):
            await super().answer(rid, frame)

    def answer_now(self, frame: bytes) -> bool:
        """`answer` where it needs no waiting (no stream was made: `True`, given to the client unless the
        exchange ended first), with no coroutine; `False`: not given, `answer` gives it."""
        if self._stream is not None:
            return False
        if not self.closed:
            self._frame = frame
            self.close()
            self.lane.done()
        return True

    def close(self) -> None:
        """`Exchange.close`; with no stream, the answer (or `no_answer`'s reply) delivered first, as the
        finished stream's wake-up would."""
        if self._stream is not None:
            super().close()
            return
        if not self._release():
            return
        deadline = self._deadline  # (`_disarm`, inline)
        if deadline is not None:
            deadline[1] = None
        frame = self._frame
        session = self._session
        try:  # as a stream's wake-up: what the delivery raises must not stop the rest of the end
            if self.writer is not None:  # SSE: the answer (or none) as its stream's only events, stored
                _sse_end(session, self.writer, frame, self._retry)
            else:
                self._json_end(frame, session)
        except Exception:
            logger.exception("POST %s: a wake-up callback failed (its answer's)", self._posts.options.path)
            if self.writer is not None:
                self.writer.close()  # the SSE response ends all the same (once: `close` is idempotent)
        if session is not None:
            session.touch(-1)  # its open request ended (first, as the `on_close` a stream has: `_upgrade`)
        for callback in self.on_close:
            callback()

    def _json_end(self, frame: bytes | None, session: HttpSession | None) -> None:
        """`close`'s JSON answer, with no stream: `frame` (`None`: cancelled, or its session ended: no
        answer) given to the wire server. Then its `cancel` has nothing left to abort (`abort` is a no-op
        once closed), so the parked answer lets go of this exchange: both are freed by their reference
        counts as it ends, not left as a cycle for the cyclic collector (the SSE writer does the same)."""
        parked = self.parked
        if frame is None:
            reply = unanswered(session, self.request_ids, self._accepts.sse, self._headers())
            whole = reply.status, reply.header_lines(), reply.body
        else:
            lines = STATELESS_LINES if session is None else (session.json_lines or json_lines(session))
            whole = 200, lines, frame
        parked._exchange = None
        parked.deliver(whole)

    def _disarm(self) -> None:
        deadline = self._deadline
        if deadline is not None:
            deadline[1] = None

    def _headers(self) -> dict[str, str]:
        session = self._session
        return {} if session is None else {MCP_SESSION_ID: session.id}

    def _rest(self) -> Later:
        """What finishes the answer as SSE: `PostHandler.respond` on this exchange, in a task."""
        posts, session, accepts, headers = self._posts, self._session, self._accepts, self._headers()
        return later(posts, lambda: posts.respond(self, session, accepts, headers))

    def _woken(self) -> None:
        """The stream's wake-up: a frame that is not a response, or its end (see the class doc)."""
        stream = self.stream
        accepts = self._accepts
        finished = stream.finished.is_set()
        if not finished and not accepts.sse:
            stream.on_wake = self._woken  # only the end counts for a client that takes JSON only
            return
        self._disarm()
        if not finished or (stream.saw_other and accepts.sse):
            self.parked.deliver(self._rest())  # a frame that is not a response, to a client that takes SSE
            return
        try:
            whole = _finished_json(self, self._headers(), self._accepts.sse)
        except Exception as exc:  # as `answering`: a bug costs this request, answered
            logger.exception("POST %s failed", self._posts.options.path)
            reply = failed(exc)
            whole = (reply.status, reply.header_lines(), reply.body)
        self.parked.deliver(whole)

    def _expired(self) -> None:
        """No answer in `stream_after` seconds: SSE from now on, as `respond` would switch."""
        stream = self.stream
        stream.on_wake = None
        stream.wake.set()
        self.parked.deliver(self._rest())


def _sse_end(session: HttpSession | None, writer: SseWriter, frame: bytes | None, retry: int | None) -> None:
    """End a light SSE answer with `frame` as its only event (`None`: none), as its stream would have
    written it (the priming event if the session primes, `retry`, then the frame, stored first when
    resumable: one store call, `answer_events`) on a stream that exists only in the event store: nothing is
    left to resume it but a replay (`Last-Event-ID`). One write with the head and the end when its head is
    still held."""
    if session is None:
        body = b"" if frame is None else format_event(frame)
    elif frame is not None:
        body = answer_events(session.store, session.id, frame, retry)
    else:
        store = store_now(session.store)
        _, body = events_now(store, session.id, new_stream_id(), (), retry)
    writer.close(body)  # (`put(body, last=True)` and `close()` in one)


def _finished_json(pending: Pending, headers: dict[str, str], sse: bool) -> Whole:
    """The JSON answer of a finished stream, as `PostHandler._json_ready` gives it, as the `Whole` it is
    written as. The session forgets the stream when its exchange ends (`Pending._upgrade`'s `on_close`),
    not here: this may run inside `HttpSession.close`'s walk over its streams."""
    stream, session = pending.stream, pending._session
    frames = stream.response_frames()
    if not frames:  # cancelled (no answer), or its session ended
        reply = unanswered(session, pending.request_ids, sse, headers)
        return reply.status, reply.header_lines(), reply.body
    lines = STATELESS_LINES if session is None else json_lines(session)
    return 200, lines, frames[0] if len(frames) == 1 else b"[" + b",".join(frames) + b"]"


def json_lines(session: HttpSession) -> bytes:
    """The header lines of `session`'s JSON answers, as `json_response` gives them (built once)."""
    lines = session.json_lines
    if lines is None:
        lines = session.json_lines = json_response(b"", {MCP_SESSION_ID: session.id}).header_lines()
    return lines


class _Abandoned(Parked):
    """`Pending`'s JSON answer: a client that leaves before it (`cancel`) has the exchange aborted, its
    handler cancelled once, as `PostHandler.respond`'s JSON wait does: nobody can receive that answer, and
    no event id that would resume it was handed out (in the 2026-07-28 era the disconnect IS the request's
    cancellation). A server that closes (`give_up`) leaves the handler to its grace, as before."""

    __slots__ = ("_exchange", "_posts", "first_step")

    def __init__(self, posts: PostHandler, exchange: Exchange) -> None:
        self._answer = self._then = None  # (`Parked.__init__`'s, without the call: one per such POST)
        self._posts: PostHandler | None = posts
        self._exchange: Exchange | None = exchange  # `None` once answered (`Pending.close`)
        self.first_step: asyncio.Task[None] | None = None
        """The handler's task, not run yet (`fast._handover`): its first step runs once the wire server
        waits for the answer (`park`), at once rather than at the loop's next iteration."""

    def park(self, then: Callable[[Whole | Later], None]) -> None:
        answer = self._answer  # (`Parked.park`, inline: once per such POST)
        if answer is None:
            self._then = then
        elif answer is not GIVEN_UP:
            then(answer)
        task, self.first_step = self.first_step, None
        if task is not None:
            step_now(task.get_loop(), task)

    def cancel(self) -> None:
        posts, self._posts = self._posts, None
        exchange = self._exchange
        if posts is not None and exchange is not None:
            posts.sessions.spawn(exchange.abort)

    def give_up(self) -> None:
        self._posts = None
        super().give_up()
