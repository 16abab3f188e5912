"""The Session's incoming side under flow control: decoded items are handled in order, within its bounds.

A Session has bounds: ``max_in_flight`` request handlers, notification jobs, an outbox high-water mark
(``session/outbox.py``), and ``max_answer_bytes``: the running handlers times the largest recent frame
(``Outbox.largest``), what they may be about to answer. When the next item of a chunk finds its bound
reached, it and everything decoded after it wait in the **backlog**, in order, and the Session stops
reading (``transport.pause_reading()`` where the transport has it; it stops calling ``receive`` in any
case): the unread input stays in the pipe and the peer's writes block. Nothing is refused for arriving
early. As handlers finish and the outbox drains, the backlog is handled from its head (from a
``loop.call_soon`` callback, never inside another handler's task), and reading resumes once it is empty.
The backlog therefore holds at most one chunk.

What goes past the backlog: what the waiting requests may themselves be waiting for, or what concerns them.
Responses to our own requests (and progress for them), or a handler waiting on the peer's answer could
never finish; ``notifications/cancelled`` (a backlogged request it names is dropped unanswered, as a
running one is cancelled); ``ping`` while there is room for it (up to twice the bound). A batch is
handled as a unit, in order, except its answers to our requests: those are resolved at once and a stub
keeps their place (a cancelled backlogged request leaves a stub too, so its batch keeps its shape).

While one of our own requests waits for the peer's answer, reading goes on even with a backlog (the answer
is somewhere in the unread input). The backlog is then capped at ``max_in_flight`` items; past the cap, a
request is refused with ``-32603 "Server busy"`` (the only refusal left), a notification is dropped with a
warning once ``2 * max_in_flight`` wait for their handler, and anything else is handled at once; a batch that
starts past the cap is answered at once as a whole (its requests "Server busy"), so the backlog holds at most
one batch beyond the cap.

Batches: every batch is decoded; what belongs to which batch, and the answer of each as one array, is the
``Batches`` object's (``session/batch.py``). With ``batches`` off (``Session.batches``, settable at any time;
it is read when a batch's first element is handled) a batch, ``[]`` too, is answered with one ``-32600``
error, ``"Invalid Request: batches are not supported"``, ``id: null``.

Guard: an exception from the decoder, or while handling one item, is logged and never ends the Session.
A chunk the decoder fails on is decoded again line by line with fresh decoders, so only the frame that
fails is lost (it is answered ``-32603`` with ``id: null``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from mcpframe import core, jsonrpc
from mcpframe._api import Id, MessageLike
from mcpframe._unstable.asyncio_tasks import step_now
from mcpframe.protocol import NOTIFICATIONS_CANCELLED, NOTIFICATIONS_PROGRESS, PING
from mcpframe.session.batch import REFUSED, SEAL, Batches, Seal, Stub, error_answer, too_large
from mcpframe.session.errors import JSONRPCError
from mcpframe.session.rejections import RejectionLog

if TYPE_CHECKING:
    from mcpframe.session.batch import Batch
    from mcpframe.session.options import SessionOptions
    from mcpframe.session.outbox import Outbox
    from mcpframe.session.outgoing import Outgoing
    from mcpframe.session.request import Request
    from mcpframe.transports.base import Transport

__all__ = ["Intake"]

logger = logging.getLogger("mcpframe.session")

_FRAME_ERROR: Final = core.FrameError


class Intake:
    """Decodes the Session's input and hands each item to it in order, within its bounds (module doc).

    Built with what it uses and nothing else: the ``transport`` (only to pause and resume reading), the
    ``outgoing`` side (answers to our own requests), the ``outbox`` (its fullness is a bound), ``running``
    (the requests whose handler runs, by id: read only, to count them and to cancel one) and the
    ``options`` (``max_in_flight``, ``max_frame``), plus the Session's callables: ``on_request`` (start a
    handler; it returns the task of one that surely suspends, not run yet), ``on_notification``, ``reply``
    (an answer, into its batch if it has one), ``write`` (a frame out), ``jobs_waiting`` (notification jobs
    not yet taken) and ``on_idle`` (the backlog was handled).
    """

    __slots__ = (
        "_answer_budget",
        "_batch_limit",
        "_batches",
        "_decoder",
        "_halted",
        "_jobs_waiting",
        "_limit",
        "_loop",
        "_max_frame",
        "_on_idle",
        "_on_notification",
        "_on_request",
        "_outbox",
        "_outgoing",
        "_over",
        "_pause",
        "_readable",
        "_rejections",
        "_reply",
        "_resume",
        "_running",
        "_scheduled",
        "_write",
        "backlog",
        "reading",
    )

    def __init__(
        self,
        transport: Transport,
        outgoing: Outgoing,
        outbox: Outbox,
        running: Mapping[Id, Request],
        *,
        options: SessionOptions,
        batches: bool,
        on_request: Callable[[MessageLike, Batch | None], asyncio.Task[None] | None],
        on_notification: Callable[[MessageLike], None],
        reply: Callable[[bytes, Batch | None], None],
        write: Callable[[bytes], None],
        jobs_waiting: Callable[[], int],
        on_idle: Callable[[], None],
    ) -> None:
        self._outgoing = outgoing
        self._outbox = outbox  # a dispatch holds it and flushes once
        self._running = running
        self._limit = options.max_in_flight  # options are frozen: this never differs from them
        self._answer_budget = options.max_answer_bytes
        self._max_frame = options.max_frame
        self._batch_limit = max(options.max_frame, core.DEFAULT_MAX_FRAME)  # batch.py's doc
        self._on_request = on_request
        self._on_notification = on_notification
        self._reply = reply
        self._write = write
        self._jobs_waiting = jobs_waiting
        self._on_idle = on_idle
        self._decoder = core.Decoder(max_frame=options.max_frame)
        self._rejections = RejectionLog()  # rate-limited warnings (session/rejections.py)
        self._batches = Batches(write, enabled=batches, rejections=self._rejections, limit=self._batch_limit)
        self.backlog: deque[Any] = deque()
        """Decoded items waiting for room, in order (read only outside: the Session checks it per answer)."""
        self._pause: Callable[[], None] | None = getattr(transport, "pause_reading", None)
        self._resume: Callable[[], None] | None = getattr(transport, "resume_reading", None)
        self.reading = True
        self._readable = asyncio.Event()
        self._readable.set()
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._halted = False  # the Session is closing: the backlog is no longer handled
        self._over = False  # the Session is over: nothing is scheduled any more

    @property
    def can_pause(self) -> bool:
        """Whether the transport can stop handing us chunks (what ``pump`` needs)."""
        return self._pause is not None and self._resume is not None

    @property
    def batches(self) -> bool:
        """Whether batches are handled (read at each batch's first element); settable."""
        return self._batches.enabled

    @batches.setter
    def batches(self, value: bool) -> None:
        self._batches.enabled = value

    @property
    def waiting(self) -> int:
        """Items in the backlog."""
        return len(self.backlog)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The Session runs on ``loop``: the backlog is drained from its callbacks."""
        self._loop = loop

    def ignored(self, offset: int, text: str, *args: object) -> None:
        """Something of a frame at ``offset`` that was ignored, not refused, logged with the rejections
        (rate-limited); ``text % args`` says what."""
        self._rejections.refusal(offset, text, *args)

    def halt(self) -> None:
        """The Session is closing (``aclose``): what waits in the backlog is not handled any more."""
        self._halted = True
        self._rejections.flush()

    def has_room(self, message: MessageLike) -> bool:
        """Whether a request may start now: a handler slot is free, the outbox is not over its mark, and
        the running handlers are not already expected to answer ``max_answer_bytes`` (each as much as the
        largest recent frame; one handler may always start, however large the answers).

        ``ping`` is cheap and says the peer is alive: it gets room past both bounds, up to twice the first.
        """
        outbox = self._outbox
        if outbox.full:
            return False
        running = len(self._running)
        limit = self._limit
        if running < limit and (running * outbox.largest < self._answer_budget or outbox.forget_largest()):
            return True
        return running < 2 * limit and message.method == PING

    async def readable(self) -> None:
        """Wait until the Session takes input again."""
        await self._readable.wait()

    # ------------------------------------------------------------------ decoding (guarded)

    def feed(self, data: bytes) -> None:
        """Decode a chunk and handle what it completes."""
        try:
            items = self._decoder.feed(data)
        except Exception:
            logger.exception(
                "the decoder failed on a chunk of %d bytes; decoding it frame by frame", len(data)
            )
            items = self._salvage(data)
        self.take(items)

    def close(self) -> None:
        """End of input: decode an unterminated last frame and handle it."""
        try:
            items = self._decoder.close()
        except Exception:
            logger.exception("the decoder failed on the last, unterminated frame; it is dropped")
            items = []
        self.take(items)
        self._rejections.flush()

    def _salvage(self, data: bytes) -> list[Any]:
        """Decode ``data`` line by line, a fresh decoder after each failure: only a failing frame is lost.

        What the failed decoder held of an unfinished frame is gone with it: the rest of that frame, the
        first line here, then reads as a frame of its own (and is answered as the invalid frame it is).
        """
        lines = data.split(b"\n")
        last = len(lines) - 1
        items: list[Any] = []
        self._decoder = core.Decoder(max_frame=self._max_frame)
        for index, line in enumerate(lines):
            piece = line if index == last else line + b"\n"
            try:
                items.extend(self._decoder.feed(piece))
            except Exception:
                logger.exception("the decoder failed on a frame; it is answered with an internal error")
                self._decoder = core.Decoder(max_frame=self._max_frame)
                message = "Internal error: the frame could not be decoded"
                items.append(
                    core.FrameError(jsonrpc.INTERNAL_ERROR, message, preview=line[: core.PREVIEW_BYTES])
                )
        return items

    # ------------------------------------------------------------------ taking items in

    def take(self, items: list[Any]) -> None:
        """Handle the items of one chunk in order; what finds no room waits in the backlog."""
        outbox = self._outbox
        outbox.holding = True  # the answers of this chunk go out together, at its end
        backlog = self.backlog
        started: asyncio.Task[None] | None = None  # the chunk's one handler that surely suspends, if one
        alone = True
        try:
            in_batch = False
            for item in items:
                index = item.batch
                if in_batch and (index is None or index == 0):
                    self._admit(SEAL)
                in_batch = index is not None
                if (  # the common case, straight to the Session: a lone request with room, nothing waiting
                    index is None
                    and not backlog
                    and type(item) is not _FRAME_ERROR
                    and item.kind == "request"
                    and self.has_room(item)
                ):
                    try:
                        task = self._on_request(item, None)
                    except Exception:
                        logger.exception("handling a frame failed; the session goes on")
                        continue
                    if task is not None:
                        alone = started is None
                        started = task
                    continue
                self._admit(item)
            if in_batch:
                self._admit(SEAL)
            if started is not None and alone and self._loop is not None:
                # its first step (a `def` tool's hand-over to its worker thread) now, once the whole chunk
                # was read (a cancel for it in the same chunk is seen first: the handler then never runs),
                # rather than at the loop's next iteration: one loop turn less per call. Only one: several
                # keep their order by running when scheduled
                step_now(self._loop, started)
        finally:
            outbox.holding = False
            outbox.flush_now()  # the answers of this chunk, in one write
            if backlog or not self.reading or outbox.full:  # else steering would change nothing
                self.steer()

    def _admit(self, item: Any) -> None:
        backlog = self.backlog
        if not backlog:
            if not self._run(item):
                backlog.append(item)
            return
        if self._batches.busy or (
            item.batch == 0 and len(backlog) >= self._limit and self._outgoing.pending
        ):  # the backlog never holds more than one batch past its cap: this one is answered at once
            self._batches.answer_busy(item, self._outgoing.resolve)
            return
        try:
            if self._bypass(item):
                return
        except Exception:
            logger.exception("handling a frame failed; the session goes on")
            return
        if item.batch is not None or item is SEAL or len(backlog) < self._limit or not self._outgoing.pending:
            backlog.append(item)
        else:  # reading goes on for the peer's answers: the backlog is full, nothing more waits
            self._overflow(item)

    def _bypass(self, item: Any) -> bool:
        """Handle ``item`` ahead of the backlog if it is one of what may go past it (module doc)."""
        if isinstance(item, core.FrameError | Seal):
            return False
        kind = item.kind
        if item.batch is not None:
            return self._batched_answer(item)
        if kind == "request":
            return item.method == PING and self.has_room(item) and self._run(item)
        if kind == "notification":
            method = item.method
            if method == NOTIFICATIONS_CANCELLED:
                self.cancel(item.params)
                return True
            return method == NOTIFICATIONS_PROGRESS and self._outgoing.progress(item.params)
        self._outgoing.resolve(item)
        return True

    def _batched_answer(self, item: Any) -> bool:
        """A batch waits as a unit, but its answers to our own requests cannot (a handler may be waiting
        on one): resolved now, with a stub in the backlog in their place."""
        if item.kind not in ("result", "error") or not self.batches:
            return False
        self._outgoing.resolve(item)
        self.backlog.append(Stub(item))
        return True

    def _overflow(self, item: Any) -> None:
        queued = self._jobs_waiting()
        if (
            not isinstance(item, core.FrameError)
            and item.kind == "notification"
            and queued >= 2 * self._limit
        ):  # nothing answers a notification: past the jobs' hard bound it is dropped, and said so
            self._rejections.refusal(
                item.offset,
                "dropped notification %r: %d notifications wait for their handler while"
                " this session waits for the peer's answers",
                item.method,
                queued,
            )
            return
        if isinstance(item, core.FrameError) or item.kind != "request":
            self._run(item, room=False)
            return
        message = (
            f"Server busy: too many requests waiting (limit {self._limit}) while this session"
            " waits for the peer's answers; retry later"
        )
        self._rejections.refusal(item.offset, "refused request %r (id %r): %s", item.method, item.id, message)
        self._write(core.encode_error(item.id, jsonrpc.INTERNAL_ERROR, message))

    def cancel(self, params: Any) -> None:
        """``notifications/cancelled``: cancel the running request it names, or drop the backlogged one."""
        rid = params.get("requestId") if isinstance(params, dict) else None
        if not isinstance(rid, int | str) or isinstance(rid, bool):
            return
        request = self._running.get(rid)
        if request is not None:
            request.cancel()
            return
        backlog = self.backlog
        for index, item in enumerate(backlog):
            if getattr(item, "kind", None) == "request" and item.id == rid:
                backlog[index] = Stub(item)  # it never runs and is not answered; its batch keeps its shape
                return

    # ------------------------------------------------------------------ handling one item

    def _run(self, item: Any, *, room: bool = True) -> bool:
        """Hand ``item`` to the Session; ``False`` if its bound is reached (it must wait). Never raises."""
        try:
            return self._handle(item, room)
        except Exception:
            logger.exception("handling a frame failed; the session goes on")
            return True

    def _handle(self, item: Any, room: bool) -> bool:
        if type(item) is Stub:
            self._batches.of(item)  # it may open its batch (or refuse it) for the elements after it
            return True
        if item is SEAL:
            self._batches.seal()
            return True
        if isinstance(item, core.FrameError):
            return self._frame_error(item, room)
        if item.kind == "request":
            return self._request(item, room)
        if item.kind == "notification":
            if room and self._jobs_waiting() >= self._limit:
                return False
            if self._batches.of(item) is not REFUSED:
                self._on_notification(item)
        elif self._batches.of(item) is not REFUSED:
            self._outgoing.resolve(item)
        return True

    def _request(self, request: Any, room: bool) -> bool:
        """A request: started once a handler slot is free and the outbox has room."""
        if room and not self.has_room(request):
            return False
        batch = self._batches.of(request)
        if batch is None or (batch is not REFUSED and batch.held <= self._batch_limit and not batch.replaced):
            self._on_request(request, batch)
        elif batch is not REFUSED:  # its answer already passed the frame limit: not run (batch.py's doc)
            message = too_large(self._batch_limit)
            if not batch.overflowed:
                batch.overflowed = True
                offset = request.offset
                self._rejections.refusal(offset, "batch at stream byte %d: %s", offset, message)
            batch.add(core.encode_error(request.id, jsonrpc.INTERNAL_ERROR, message))
        return True

    def _frame_error(self, error: Any, room: bool) -> bool:
        """A rejected frame: logged, and answered unless it is a notification or a response (once the
        outbox has room); a rejected response to one of our requests fails that request."""
        if room and self._outbox.full:
            return False
        batch = self._batches.of(error)
        if batch is None and error.code == jsonrpc.INVALID_REQUEST and self._batches.refused_empty(error):
            return True
        if batch is not REFUSED:
            self._rejections.frame(error)
            if jsonrpc.response_shaped(error.raw):  # never answered: a response gets no response
                self._fail_our_request(error)
            elif not error.notification:
                self._reply(error_answer(error, max_frame=self._max_frame), batch)
        return True

    def _fail_our_request(self, error: Any) -> None:
        """A rejected response to one of our own requests fails that request at once (it would wait for
        its timeout otherwise), with the core's reason."""
        rid = error.id
        if rid is not None:
            self._outgoing.reject(
                rid, JSONRPCError(error.code, f"the peer's answer is invalid: {error.message}")
            )

    # ------------------------------------------------------------------ draining and steering

    def wake(self) -> None:
        """Room may have appeared (a handler finished, the outbox drained): handle the backlog soon."""
        if self._scheduled or (not self.backlog and self.reading):
            return
        loop = self._loop
        if loop is None or self._over:
            return
        self._scheduled = True
        loop.call_soon(self._drain)

    def _drain(self) -> None:
        backlog = self.backlog
        if self._over:
            self._scheduled = False
            return
        outbox = self._outbox
        outbox.holding = True
        try:
            while backlog and not self._halted:
                if not self._run(backlog[0]):
                    break
                backlog.popleft()
        finally:
            self._scheduled = False
            outbox.holding = False
            outbox.flush_now()
            self.steer()
            self._on_idle()

    def steer(self) -> None:
        """Pause or resume reading: read while nothing waits (or while the peer owes us an answer)."""
        want = not self._outbox.full and (not self.backlog or self._outgoing.pending > 0)
        if want is self.reading:
            return
        self.reading = want
        if want:
            self._readable.set()
            if self._resume is not None:
                self._resume()
        else:
            self._readable.clear()
            if self._pause is not None:
                self._pause()

    def clear(self) -> None:
        """The session is over: forget what waits, schedule nothing more."""
        self._over = True
        self._halted = True
        self._rejections.flush()
        self.backlog.clear()
        self._batches.clear()
        self._readable.set()  # a read loop waiting for room ends with the session
