"""``Session``: a JSON-RPC 2.0 peer over a Transport (not MCP-aware; see ``docs/session-api.md``).

One core ``Decoder`` per connection, fed once per chunk. Everything the reader does with what it decoded is
synchronous (start a handler task, resolve a waiter, queue a notification), so reading never waits on a
handler. Writes go to an ``Outbox`` that coalesces the frames of one loop iteration into one write.

asyncio only (anyio's asyncio backend included; trio is not supported). Requests are not run in an anyio
task group: each handler starts at once, inside the dispatch, as a task of its own (``session/eager.py``;
most handlers finish there and then no task is ever scheduled), or, with ``Session.eager_handlers = False``
or behind a still-queued notification, in a plain ``loop.create_task`` task. ``notifications/cancelled``
cancels the handler's task with ``Task.cancel()`` (once it has left any shielded anyio scope): the handler
sees one ``CancelledError``. A transport with ``pump(callback)`` (and ``pause_reading``/``resume_reading``)
hands the reader each chunk from the event loop's readiness callback; one with ``send_nowait(data) -> int``
takes the answers without a task switch. The session waits for every handler task on every exit path.

Flow control (``session/intake.py``): at ``max_in_flight`` running handlers, or with the outbox over its
high-water mark, what was decoded waits in a backlog (in order) and reading stops until there is room, so
the pipe pushes back on the peer and nothing is refused for arriving early. Nothing ends the session
silently: an unexpected error is logged once, at ERROR, before ``run`` raises it.

A Session is composed of the objects it owns, each built with only what it needs: the ``Intake``
(``session/intake.py``: decodes, orders and bounds what is read), the ``Outgoing`` side
(``session/outgoing.py``: our own requests and notifications, the responses and progress that answer them;
built with ``write``, ``send``, ``queue`` and ``expect_answer``), the ``Outbox`` (``session/outbox.py``:
coalesced, bounded writes) and the ``Jobs`` (``session/jobs.py``: notification handlers and progress
callbacks, run in arrival order). This module is the connection itself: the lifecycle (``run``,
``aclose``, EOF and cleanup), the read loop, and running request handlers and answering them (the hot
per-request path). Its tuning knobs are one ``SessionOptions``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ClassVar, Final

import anyio
import anyio.abc
import anyio.lowlevel

from mcpframe import jsonrpc
from mcpframe._api import Id, MessageLike
from mcpframe.protocol import NOTIFICATIONS_CANCELLED, NOTIFICATIONS_PROGRESS
from mcpframe.session.batch import Batch
from mcpframe.session.eager import AVAILABLE as EAGER
from mcpframe.session.eager import EagerStarter
from mcpframe.session.errors import ConnectionClosed, JSONRPCError
from mcpframe.session.frames import Spawner, error_frame, failure_frame, result_frame, task_spawner
from mcpframe.session.intake import Intake
from mcpframe.session.jobs import Jobs
from mcpframe.session.options import SessionOptions
from mcpframe.session.outbox import IO_ERRORS, Outbox
from mcpframe.session.outgoing import Outgoing
from mcpframe.session.request import IN_SCOPE, ProgressCallback, Request
from mcpframe.session.suspends import SuspendRule, suspends_failed
from mcpframe.transports.base import Transport

__all__ = ["NotificationHandler", "RequestHandler", "Session"]

logger = logging.getLogger("mcpframe.session")

RequestHandler = Callable[[Request], Awaitable[Any]]
NotificationHandler = Callable[[MessageLike], Awaitable[None]]

_IO_ERRORS = IO_ERRORS


_DEFAULTS: Final = SessionOptions()


def _with_overrides(options: SessionOptions, **fields: int | None) -> SessionOptions:
    """``options`` with the keywords that were given (not ``None``) in place of its fields."""
    given = {name: value for name, value in fields.items() if value is not None}
    return dataclasses.replace(options, **given) if given else options


def only(group: BaseExceptionGroup[Any], exc: BaseException | None) -> bool:
    """Whether ``group`` wraps nothing but ``exc`` (what a task group makes of its body's exception)."""
    return exc is not None and len(group.exceptions) == 1 and group.exceptions[0] is exc


class Session:
    """A JSON-RPC peer: answers incoming requests concurrently and sends its own requests.

    ``options`` holds the tuning knobs (``SessionOptions``); ``max_in_flight``, ``max_pending``,
    ``max_frame`` and ``outbox_high_water`` may also be given as keywords (the README documents them), and
    then override the same fields of ``options``. ``batches`` is the initial value of the settable
    ``batches`` attribute.
    """

    eager_handlers: ClassVar[bool] = True
    """Start each handler at once, in the reader's dispatch, as a task of its own (``session/eager.py``);
    ``False``: one ``loop.create_task`` per request, first run on the next loop iteration."""

    def __init__(
        self,
        transport: Transport,
        *,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        options: SessionOptions | None = None,
        batches: bool = True,
        max_in_flight: int | None = None,
        max_pending: int | None = None,
        max_frame: int | None = None,
        outbox_high_water: int | None = None,
    ) -> None:
        options = _with_overrides(
            options or _DEFAULTS,
            max_in_flight=max_in_flight,
            max_pending=max_pending,
            max_frame=max_frame,
            outbox_high_water=outbox_high_water,
        )
        self._options = options  # the one place of every knob (frozen): nothing here keeps a copy
        self.transport = transport
        self.request_handler = request_handler
        self.notification_handler = notification_handler
        self._suspends: Callable[[Request], bool] | None = None
        self._rule: SuspendRule | None = None  # _suspends when it is one: checked inline
        self.closed = False
        self._incoming: dict[Id, Request] = {}
        self._jobs = Jobs(on_taken=self._job_taken)
        self._outgoing = Outgoing(
            write=self._write,
            send=self._send,
            queue=self._jobs.put,
            notices_waiting=self._jobs.waiting_notices,
            expect_answer=self._expect_answer,
            max_pending=options.max_pending,
            timeout=options.timeout,
        )
        high_water = options.outbox_high_water
        large = options.max_answer_bytes // options.max_in_flight  # frames no larger never pass the budget
        self._outbox = Outbox(
            transport, self._connection_lost, self._room_made, high_water=high_water, large=large
        )
        self._intake = Intake(
            transport,
            self._outgoing,
            self._outbox,
            self._incoming,
            options=options,
            batches=batches,
            on_request=self._on_request,
            on_notification=self._on_notification,
            reply=self._reply,
            write=self._write,
            jobs_waiting=self._jobs.waiting,
            on_idle=self._check_idle,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._spawn: Spawner
        self._eager: EagerStarter | None = None
        self._eof = False
        self._broken = False
        self._finished = False
        self._end_logged = False
        self._handlers_idle: asyncio.Event | None = None
        self._done: anyio.Event | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._outer: anyio.abc.TaskGroup | None = None
        self._loop_token: anyio.lowlevel.EventLoopToken | None = None

    # ------------------------------------------------------------------ introspection

    def loop_token(self) -> anyio.lowlevel.EventLoopToken:
        """anyio's token of the event loop this Session is used on (call it on that loop): taken at the
        first call, then kept, since something bound to a pooled Session may ask on every request."""
        token = self._loop_token
        if token is None:
            token = self._loop_token = anyio.lowlevel.current_token()
        return token

    @property
    def options(self) -> SessionOptions:
        """The knobs this Session was built with (the keywords applied); frozen."""
        return self._options

    @property
    def max_in_flight(self) -> int:
        """``options.max_in_flight``: request handlers running at once (flow control)."""
        return self._options.max_in_flight

    @property
    def drain_timeout(self) -> float:
        """``options.drain_timeout``: seconds the end of the session may take."""
        return self._options.drain_timeout

    @property
    def in_flight(self) -> int:
        """Incoming requests whose handler is running."""
        return len(self._incoming)

    def requests_in_flight(self) -> list[Request]:
        """The incoming requests not done yet (``in_flight`` of them), in arrival order."""
        return list(self._incoming.values())

    @property
    def backlog(self) -> int:
        """Decoded items waiting for room (flow control: reading is paused meanwhile)."""
        return self._intake.waiting

    @property
    def outbox_bytes(self) -> int:
        """Bytes of answers and notifications not yet taken by the transport."""
        return self._outbox.queued

    @property
    def pending(self) -> int:
        """Outgoing requests waiting for a response."""
        return self._outgoing.pending

    @property
    def progress_waiters(self) -> int:
        """Outgoing requests listening for progress."""
        return self._outgoing.progress_waiters

    @property
    def timeout(self) -> float | None:
        """Seconds ``request`` waits when the call gives no ``timeout`` (``None``: no limit); settable."""
        return self._outgoing.timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._outgoing.timeout = value

    @property
    def suspends(self) -> Callable[[Request], bool] | None:
        """Optional: whether a request's handler surely suspends in its first step (a sync tool, whose call
        goes to a worker thread); settable. Such a request starts in a task of its own, not eagerly: an
        eager start would only add the hand-over of its host task (``session/eager.py``), ~19k
        instructions. A ``SuspendRule`` is checked without a call (``session/suspends.py``); a hook that
        raises is logged, and its request starts in a task of its own."""
        return self._suspends

    @suspends.setter
    def suspends(self, hook: Callable[[Request], bool] | None) -> None:
        self._suspends = hook
        self._rule = hook if type(hook) is SuspendRule else None

    @property
    def batches(self) -> bool:
        """Whether incoming JSON-RPC batches are handled; when ``False`` each gets one ``-32600`` error.

        Settable at any time (an MCP server sets it once the revision is negotiated); a batch is judged
        when its first element is handled.
        """
        return self._intake.batches

    @batches.setter
    def batches(self, value: bool) -> None:
        self._intake.batches = value

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Session:
        """Run the session in the background until the block ends."""
        self._outer = anyio.create_task_group()
        await self._outer.__aenter__()
        self._outer.start_soon(self.run)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        closing: BaseException | None = None
        try:
            await self.aclose()
        except BaseException as exc:
            # A failed run() cancels _outer's scope, and so this task: aclose() can then end in that
            # CancelledError (wherever it awaits; which await depends on the scheduling, e.g. with or without
            # the eager start). _outer must still be exited, or its cancel scope stays this task's current
            # one and the caller's next scope fails to exit (anyio's RuntimeError); handed the
            # CancelledError, the task group absorbs it and raises run()'s error instead.
            closing = exc
            exc_info = (type(exc), exc, exc.__traceback__)
        assert self._outer is not None
        try:
            suppressed = await self._outer.__aexit__(*exc_info)
        except BaseExceptionGroup as group:
            if only(group, exc_info[1]):
                if closing is not None:
                    raise closing from None  # aclose()'s own failure, unwrapped
                return False  # the block's own exception: let it propagate unwrapped
            raise
        if closing is None:
            return suppressed
        if suppressed:
            return False  # the group absorbed aclose()'s cancellation (its own): the block's error goes on
        raise closing

    async def run(self) -> None:
        """Read and dispatch until EOF or ``aclose()``; then clean everything up and close the transport."""
        if self._done is not None:
            raise RuntimeError("Session.run() can only be called once")
        self._done = anyio.Event()
        self._jobs.start()
        try:
            self._loop = asyncio.get_running_loop()
            self._spawn = task_spawner(self._loop)
            self._eager = (
                EagerStarter(self._loop, self._spawn, reuse=True) if self.eager_handlers and EAGER else None
            )
            self._intake.start(self._loop)
        except RuntimeError:
            raise RuntimeError("mcpframe's Session runs on asyncio (or anyio's asyncio backend)") from None
        try:
            if self.closed:
                return
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._outbox.writer, name="mcpframe-session-writer")
                tg.start_soon(self._jobs.worker, name="mcpframe-session-jobs")
                await self._read_loop()
                await self._finish()
                tg.cancel_scope.cancel()
        except Exception as exc:
            self._log_end("the session ended because of an unexpected error", exc)
            raise
        finally:
            await self._cleanup()

    def _log_end(self, why: str, exc: BaseException) -> None:
        """Say why the session ended, once, at ERROR (with the traceback of an unexpected error)."""
        if self._end_logged:
            return
        self._end_logged = True
        if isinstance(exc, _IO_ERRORS):
            logger.error("%s: %s", why, exc)
        else:
            logger.error("%s", why, exc_info=exc)

    async def aclose(self, *, drain: bool = True) -> None:
        """Stop now: cancel handlers, fail pending requests, close the transport. Idempotent.

        What was already sent is first handed to the transport (up to ``drain_timeout`` seconds);
        ``drain=False`` skips that wait, for an owner that knows nobody will read it (an HTTP exchange
        aborted: its client left, or its session was deleted while a slow client held the writes)."""
        running = self._tg is not None and not self.closed
        self.closed = True
        self._intake.halt()
        self._outgoing.stop_sending()
        if running:
            assert self._tg is not None
            if drain:
                with anyio.move_on_after(self._options.drain_timeout):
                    await self._flush()  # what was already sent is delivered, not dropped
            self._tg.cancel_scope.cancel()
        if self._done is not None:
            await self._done.wait()
        else:
            await self.transport.aclose()

    async def _finish(self) -> None:
        """EOF: nothing more can arrive; let running handlers answer (bounded), then flush the writes."""
        self._eof = True
        self._outgoing.end_of_input(ConnectionClosed("the peer closed the connection"))
        with anyio.move_on_after(self._options.drain_timeout) as scope:
            if self._incoming or self._intake.waiting:  # the backlog is still handled after EOF
                self._handlers_idle = asyncio.Event()
                await self._handlers_idle.wait()
            await self._jobs.finish()  # only now (the backlog may still have held notifications); delivered
            await self._flush()
        if scope.cancelled_caught and (cut := len(self._incoming) + self._intake.waiting):
            logger.warning(  # once per session: never silently (a shell pipe's input ends at once)
                "the input ended; %d requests still running or waiting after drain_timeout (%g s) are "
                "cancelled unanswered (SessionOptions(drain_timeout=...))",
                cut,
                self._options.drain_timeout,
            )

    async def _cleanup(self) -> None:
        self.closed = True
        self._eof = True
        self._outgoing.close(ConnectionClosed("the session is closed"))
        self._intake.clear()
        with anyio.CancelScope(shield=True):
            await self._stop_handlers()
            self._outbox.clear()
            self._finished = True
            self._jobs.close()
            try:
                await self.transport.aclose()
            except Exception:
                logger.exception("closing the transport failed")
        assert self._done is not None
        self._done.set()

    async def _stop_handlers(self) -> None:
        """Cancel every running handler and wait for its task (they answer nothing now)."""
        hosts = self._eager.close() if self._eager is not None else []
        if hosts:
            await asyncio.wait(hosts)
        while self._incoming:
            requests = list(self._incoming.values())
            for request in requests:
                request.cancel()
            tasks = [r._task for r in requests if r._task is not None and not r._task.done()]
            if tasks:
                await asyncio.wait(tasks)
            for request in requests:
                if self._incoming.get(request.id) is request:
                    del self._incoming[request.id]

    # ------------------------------------------------------------------ our own requests

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """Send a request and return its result.

        Raises ``JSONRPCError`` for an error response, ``RequestTimeout`` when ``timeout`` (default:
        ``Session.timeout``) passes without a response or progress, or ``max_timeout`` passes at all,
        ``ConnectionClosed`` when the connection ends first. On timeout or cancellation of the caller,
        ``notifications/cancelled`` is sent to the peer. ``on_progress(progress, total, message)`` is called
        for each ``notifications/progress`` for this request (the token travels in ``params._meta``).
        """
        return await self._outgoing.request(
            method, params, timeout=timeout, on_progress=on_progress, max_timeout=max_timeout
        )

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (still possible after the peer's EOF, while handlers finish)."""
        await self._outgoing.notify(method, params)

    # ------------------------------------------------------------------ writing

    def _write(self, frame: bytes) -> None:
        """Queue a frame; everything queued in one loop iteration goes out with one write."""
        if self._broken or self._finished:
            return
        self._outbox.put(frame)

    async def _send(self, frame: bytes) -> None:
        self._write(frame)
        if self._outbox.full:  # the peer is not keeping up: the sender waits (back-pressure on handlers)
            await self._flush()

    async def _flush(self) -> None:
        """Wait until everything queued so far has been handed to the transport."""
        if self._tg is not None and not self._finished:
            await self._outbox.drain()

    def _connection_lost(self, exc: BaseException) -> None:
        self._broken = True
        self._outgoing.stop_sending()
        if self._eof or self.closed:  # the peer is gone and was allowed to go: not an error
            logger.debug("transport send failed after the end of input: %s", exc)
        else:
            self._log_end("the session ended: writing to the peer failed", exc)
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def _ignored(self, offset: int, text: str, *args: object) -> None:
        """Log something of a peer's frame that was ignored with the rejections (rate-limited)."""
        self._intake.ignored(offset, text, *args)

    def _room_made(self) -> None:
        """The outbox drained below its low-water mark: what waits may go on."""
        self._intake.wake()

    def _expect_answer(self) -> None:
        """One of our requests waits for the peer's answer, somewhere in the unread input: read on."""
        intake = self._intake
        if not intake.reading:
            intake.steer()

    def _check_idle(self) -> None:
        """At EOF, ``_finish`` waits until no handler runs and nothing waits."""
        if self._handlers_idle is not None and not self._incoming and not self._intake.waiting:
            self._handlers_idle.set()

    # ------------------------------------------------------------------ reading

    async def _read_loop(self) -> None:
        intake = self._intake
        pump = getattr(self.transport, "pump", None)
        if pump is not None and intake.can_pause:  # chunks come to us as they arrive: no task switch
            try:
                await pump(intake.feed)
            except _IO_ERRORS as exc:
                self._log_end("the session ended: reading from the peer failed", exc)
            intake.close()
            return
        receive = self.transport.receive
        while True:
            if not intake.reading:
                await intake.readable()
            try:
                data = await receive()
            except _IO_ERRORS as exc:  # a broken connection reads as its end
                self._log_end("the session ended: reading from the peer failed", exc)
                data = b""
            if not data:
                break
            intake.feed(data)
        intake.close()

    def _reply(self, frame: bytes, batch: Batch | None) -> None:
        if batch is None:
            self._write(frame)
        else:
            batch.add(frame)

    def _on_request(self, message: MessageLike, batch: Batch | None) -> asyncio.Task[None] | None:
        """Start answering the request ``message`` (read by the intake); the task of a handler that surely
        suspends, not run yet (``_start``), else ``None``."""
        rid = message.id
        assert rid is not None
        incoming = self._incoming
        if rid in incoming or not self.request_handler:
            self._reply(error_frame(rid, self._refusal(message)), batch)
            return None
        try:
            request = Request(self, message, batch)
        except Exception as exc:  # e.g. params that cannot be built: answer, never lose the request
            logger.exception("request %r (id %r) cannot be read", message.method, rid)
            failure = JSONRPCError(jsonrpc.INTERNAL_ERROR, f"Internal error ({type(exc).__name__})")
            self._reply(error_frame(rid, failure), batch)
            return None
        incoming[rid] = request
        if batch is not None:
            batch.expect(rid)
        return self._start(request, self._handle(request))

    def _start(self, request: Request | None, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """Run ``coro``, the handling of the registered ``request`` (``None``: a refusal's answer), eagerly
        where it can: most handlers are done, and answered, when this returns. It gets a task of its own
        instead without an eager start, behind a notification still queued (that one is handled first), or
        when its handler surely suspends (``suspends``: an eager start would gain nothing). Returns the task
        of a handler that surely suspends (not run yet), else ``None``."""
        eager = self._eager
        behind = own_task = eager is None or self._jobs.queued > 0
        if not own_task and request is not None:
            rule = self._rule
            if rule is not None:  # checked here, not called (SuspendRule.__call__): every request's path
                try:  # free unless it raises (3.11's zero-cost try); cheaper than checking the types first
                    own_task = request.method == rule.method and request.params.get(rule.key) in rule.names
                except (AttributeError, TypeError):  # params not an object, or a name that cannot be a key
                    own_task = False
                except Exception:  # the names container raised: as a hook that raised (_ask_suspends)
                    suspends_failed(request)
                    own_task = True
            elif self._suspends is not None:
                own_task = self._ask_suspends(self._suspends, request)
        task: asyncio.Task[None] | None
        if own_task:
            task = self._spawn(coro)
        else:
            assert eager is not None  # without one, own_task
            task = eager.start(coro)
        if request is not None and task is not None:
            request._task = task
            if request._cancelled:  # it cancelled itself during its first step
                request._deliver_cancel()
        return task if own_task and not behind else None

    @staticmethod
    def _ask_suspends(hook: Callable[[Request], bool], request: Request) -> bool:
        try:
            return hook(request)
        except Exception:  # the request is registered, so it must still start (and end): in a task
            suspends_failed(request)
            return True

    def _refusal(self, message: MessageLike) -> JSONRPCError:
        if self.request_handler is None:
            return JSONRPCError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {message.method}")
        return JSONRPCError(
            jsonrpc.INVALID_REQUEST, f"Invalid Request: request id {message.id!r} is already in flight"
        )

    async def _handle(self, request: Request) -> None:
        frame: bytes | None = None
        try:
            if self._outbox.full:  # a task of its own run after the outbox filled: the answer would overshoot
                request._started = True  # a cancel now ends the wait (Task.cancel); the handler never runs
                await self._outbox.room()
            if not request._cancelled:  # cancelled before it started: the handler never runs
                request._started = True
                handler: RequestHandler = self.request_handler  # type: ignore[assignment]
                try:  # the default path awaits the handler itself: no frame between (request.IN_SCOPE)
                    result = await (request._call_in_scope(handler) if IN_SCOPE else handler(request))
                except (JSONRPCError, Exception) as exc:
                    frame = failure_frame(request, exc)
                else:
                    frame = result_frame(request, result)
        except asyncio.CancelledError as cancel:
            frame = request._cancelled_answer(cancel)  # the loop's cancel (shutting down) is raised again
        finally:
            request._done = True
            if request._waiter is not None:
                request._waiter.set()
            incoming = self._incoming
            if incoming.get(request.id) is request:
                del incoming[request.id]
            intake = self._intake
            if intake.backlog or not intake.reading:  # a slot is free: what waits may start
                intake.wake()
            elif not incoming and self._handlers_idle is not None:
                self._handlers_idle.set()
        self._answer(request, None if request._cancelled else frame)

    def _answer(self, request: Request, frame: bytes | None) -> None:
        if request._batch is not None:
            request._batch.answer(frame)
        elif frame is not None and not (self._broken or self._finished):
            # the last answer out (nothing else will add to this write) is sent now, with no flush
            # scheduled for the next loop iteration (it would find nothing to send)
            self._outbox.put(frame, last=not self._incoming and not self._outbox.holding)
            return
        if not self._incoming and not self._outbox.holding:  # nothing else will add to this write: send it
            self._outbox.flush_now()

    def _on_notification(self, message: MessageLike) -> None:
        method = message.method
        params = message.params
        if method == NOTIFICATIONS_CANCELLED:
            self._intake.cancel(params)
            return
        if method == NOTIFICATIONS_PROGRESS and self._outgoing.progress(params):
            return
        if self.notification_handler is not None:
            self._jobs.put_notice(self.notification_handler, message)

    def _job_taken(self) -> None:
        if self._intake.backlog:  # a job slot is free: a waiting notification may go on
            self._intake.wake()
