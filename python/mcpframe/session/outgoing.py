"""``Outgoing``: the Session's own requests to the peer, and what answers them.

The Session owns one ``Outgoing``, built with what it truly needs from the Session: ``write`` (queue a frame
now, for ``notifications/cancelled``), ``send`` (queue a frame and wait while the outbox is full: the
back-pressure our senders feel), ``queue`` (hand a progress callback to the Session's job worker, so it runs
in arrival order and never in the reader; ``False`` when the worker is gone) and ``expect_answer`` (a
request was just allocated: its answer is somewhere in the unread input, so reading must go on). It owns
the rest: the core ``Correlator`` that gives ids and finds the waiter of a response, the ``Pending`` waiter
of each request (its deadline, its progress callback), the progress-token table, ``notifications/cancelled``
sent on timeout or cancellation, and failing every waiter when the connection ends.

Order: a response completes its request only after the progress callbacks of the notifications that
arrived before it have run, and the notification handlers queued before it too (a log message sent before
a tool's result is seen by the time ``call_tool`` returns). The reader never waits for that: when such
callbacks are still queued, the response is *held* on its ``Pending`` (the deadline is lifted: the answer
is in) and the last of those callbacks (or a release queued behind the handlers) releases it from the job
worker. A request sent from a notification handler is exempt: its answer must not wait behind the handler
that waits for it. Progress arriving after the response is ignored, so nothing can hold an answer for
longer than the callbacks of what came before it (the running one, at most ``PROGRESS_QUEUE`` queued, and
the newest overflowed update; and the handlers queued, which the Intake bounds). A held answer is released
when the Session closes (``close``), as the worker is gone then.

The Session tells it when sending stops (``stop_sending``), when the peer's input has ended
(``end_of_input``) and when everything is over (``close``).
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from typing import Any, TypeGuard

import anyio

from mcpframe import core
from mcpframe._api import Id, MessageLike
from mcpframe.protocol import NOTIFICATIONS_CANCELLED, PROGRESS_TOKEN
from mcpframe.session.errors import ConnectionClosed, JSONRPCError, RequestTimeout
from mcpframe.session.jobs import IN_JOB
from mcpframe.session.request import ProgressCallback

__all__ = ["PROGRESS_QUEUE", "Outgoing", "Pending", "is_id", "with_progress_token"]

logger = logging.getLogger("mcpframe.session")


PROGRESS_QUEUE = 64
"""Progress callbacks queued per request at most. A callback that keeps up sees every update; one that falls
further behind sees the queued ones and then only the newest of the rest (progress only grows), so a peer
flooding progress cannot grow our memory."""


def is_id(value: object) -> TypeGuard[Id]:
    """Whether ``value`` may be a JSON-RPC id (an int or a str, never a bool)."""
    return isinstance(value, int | str) and not isinstance(value, bool)


class Pending:
    """Waits for the response to one outgoing request; progress pushes its deadline back (up to a cap)."""

    __slots__ = (
        "event",
        "failure",
        "from_job",
        "hard_deadline",
        "held",
        "message",
        "method",
        "on_progress",
        "progress_overflow",
        "progress_queued",
        "progress_running",
        "scope",
        "timeout",
    )

    def __init__(self, method: str, timeout: float | None, on_progress: ProgressCallback | None) -> None:
        self.method = method
        self.timeout = timeout
        self.on_progress = on_progress
        self.event = anyio.Event()
        self.scope: anyio.CancelScope | None = None  # only when there is a deadline
        self.message: MessageLike | None = None
        self.failure: BaseException | None = None
        self.hard_deadline = math.inf
        self.progress_queued = 0  # progress callbacks queued and not yet run
        self.progress_running = False  # one of its progress callbacks runs now (in the job worker)
        self.held = False  # the response arrived before its progress callbacks ran: ``settle`` releases it
        self.from_job = IN_JOB.get()  # sent from a notification handler: its answer never waits for them
        # past PROGRESS_QUEUE of those, the newest (progress, total, message) waits here, replacing older ones
        self.progress_overflow: tuple[float, Any, Any] | None = None

    def arm(self, max_timeout: float | None) -> None:
        """Start the clock: the deadline is ``timeout`` from now, capped at ``max_timeout`` from now."""
        now = anyio.current_time()
        if max_timeout is not None:
            self.hard_deadline = now + max_timeout
        soft = now + self.timeout if self.timeout is not None else math.inf
        deadline = min(soft, self.hard_deadline)
        if deadline != math.inf:
            self.scope = anyio.CancelScope(deadline=deadline)

    def extend(self) -> None:
        """Progress arrived: restart the soft timeout, capped by the hard deadline."""
        if self.timeout is not None and self.scope is not None:
            self.scope.deadline = min(anyio.current_time() + self.timeout, self.hard_deadline)

    def resolve(self, message: MessageLike) -> None:
        """The response arrived: complete the wait now, or hold it while earlier progress callbacks run."""
        self.message = message
        if self.progress_queued == 0 and not self.progress_running:
            self.event.set()
            return
        self.held = True
        if self.scope is not None:  # the answer is in: only our own callbacks are left to wait for
            self.scope.deadline = math.inf

    def settle(self) -> None:
        """A progress callback finished: release a held response once no earlier callback is left."""
        if self.held and self.progress_queued == 0 and not self.progress_running:
            self.held = False
            self.event.set()

    def fail(self, exc: BaseException) -> None:
        """The connection ended before a response."""
        if not self.event.is_set():
            self.failure = exc
            self.event.set()

    def outcome(self) -> Any:
        """The result, or raise the error response / the connection failure."""
        if self.failure is not None:
            raise self.failure
        message = self.message
        if message is None:
            raise ConnectionClosed("no response")
        if message.kind == "error":
            error = message.error or {}
            raise JSONRPCError(error.get("code", 0), str(error.get("message", "")), error.get("data"))
        return message.result


def with_progress_token(params: Any, token: Id) -> tuple[Any, Id]:
    """``params`` with ``_meta.progressToken`` set (a caller-supplied token is kept); never mutates params."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise TypeError("on_progress needs params to be a dict (the token travels in params._meta)")
    meta = params.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    existing = meta.get(PROGRESS_TOKEN)
    if is_id(existing):
        return params, existing
    meta[PROGRESS_TOKEN] = token
    return {**params, "_meta": meta}, token


async def _report_progress(waiter: Pending, update: tuple[float, Any, Any]) -> None:
    """Call ``waiter``'s progress callback with ``update``, then with the newest overflowed one if this is
    the last queued; then release the response if it was held for them (module doc: Order)."""
    waiter.progress_queued -= 1
    waiter.progress_running = True
    callback = waiter.on_progress
    assert callback is not None
    try:
        outcome = callback(*update)
        if inspect.isawaitable(outcome):
            await outcome
        if waiter.progress_queued == 0 and waiter.progress_overflow is not None:
            newest, waiter.progress_overflow = waiter.progress_overflow, None
            outcome = callback(*newest)
            if inspect.isawaitable(outcome):
                await outcome
    finally:  # a failing callback releases the response too (the worker logs the failure)
        waiter.progress_running = False
        waiter.settle()


def _release(waiter: Pending) -> None:
    """The jobs queued before ``waiter``'s response have run: release it (module doc: Order)."""
    waiter.progress_queued -= 1
    waiter.settle()


class Outgoing:
    """The outgoing half of a JSON-RPC peer: requests, notifications, and what answers them (module doc)."""

    __slots__ = (
        "_expect_answer",
        "_held",
        "_notices_waiting",
        "_pending",
        "_progress",
        "_queue",
        "_send",
        "_write",
        "eof",
        "sending",
        "timeout",
    )

    def __init__(
        self,
        *,
        write: Callable[[bytes], None],
        send: Callable[[bytes], Awaitable[None]],
        queue: Callable[..., bool | None],
        notices_waiting: Callable[[], int],
        expect_answer: Callable[[], None],
        max_pending: int,
        timeout: float | None,
    ) -> None:
        self._write = write
        self._send = send
        self._queue = queue
        self._notices_waiting = notices_waiting
        self._expect_answer = expect_answer
        self._pending = core.Correlator(max_pending=max_pending)
        self._progress: dict[Id, Pending] = {}
        self._held: set[Pending] = set()  # answered, waiting for their earlier progress callbacks
        self.timeout = timeout  # for a request that names none
        self.sending = True  # False once the session is closed or a write failed: nothing more goes out
        self.eof = False  # the peer's input has ended: no answer can arrive any more

    @property
    def pending(self) -> int:
        """Requests waiting for a response."""
        return len(self._pending)

    @property
    def progress_waiters(self) -> int:
        """Requests listening for progress."""
        return len(self._progress)

    # ------------------------------------------------------------------ the Session's transitions

    def stop_sending(self) -> None:
        """The session is closing or a write failed: refuse new requests, send no cancellations."""
        self.sending = False

    def end_of_input(self, exc: BaseException) -> None:
        """The peer's input ended: every waiting request fails with ``exc``; new ones are refused."""
        self.eof = True
        self.fail_all(exc)

    def close(self, exc: BaseException) -> None:
        """The session is over: fail every waiting request with ``exc`` and forget all progress tokens."""
        self.sending = False
        self.eof = True
        self.fail_all(exc)
        self._progress.clear()
        for waiter in self._held:  # the worker is gone: their callbacks never run; the answers did arrive
            waiter.held = False
            waiter.event.set()
        self._held.clear()

    def fail_all(self, exc: BaseException) -> None:
        """Fail every waiting request with ``exc``."""
        for _, waiter in self._pending.drain():
            assert isinstance(waiter, Pending)
            waiter.fail(exc)

    # ------------------------------------------------------------------ what answers our requests

    def resolve(self, message: MessageLike) -> None:
        """A response (``result`` or ``error``): hand it to the request waiting for it, if any."""
        rid = message.id
        if rid is None:
            logger.warning(
                "the peer answered an error with no id (it could not read a line we sent, or it could not"
                " tell which request it answers): %r",
                message.error,
            )
            return
        waiter = self._pending.pop(rid, None)
        if waiter is None:
            logger.debug("ignoring a response for id %r: no request is waiting for it", rid)
            return
        assert isinstance(waiter, Pending)
        if self._notices_waiting() and not waiter.from_job:  # notifications that came first are handled first
            waiter.progress_queued += 1
            if self._queue(_release, waiter) is False:  # the worker is gone
                waiter.progress_queued -= 1
        waiter.resolve(message)
        if waiter.held:
            self._held.add(waiter)

    def reject(self, rid: Id, exc: BaseException) -> None:
        """The peer's answer to request ``rid`` could not be read: that request fails with ``exc`` now."""
        waiter = self._pending.pop(rid, None)
        if isinstance(waiter, Pending):
            waiter.fail(exc)

    def progress(self, params: Any) -> bool:
        """``notifications/progress``: if it is for one of our requests, extend its timeout and queue its
        callback, and return ``True``; ``False`` when no request of ours listens for its token."""
        token = params.get(PROGRESS_TOKEN) if isinstance(params, dict) else None
        waiter = self._progress.get(token) if is_id(token) else None
        if waiter is None:
            return False
        if waiter.message is not None:  # after its response: late, and it must not hold the answer longer
            return True
        assert isinstance(params, dict)
        waiter.extend()
        progress = params.get("progress")
        if waiter.on_progress is not None and isinstance(progress, int | float):
            update = (progress, params.get("total"), params.get("message"))
            if waiter.progress_queued < PROGRESS_QUEUE:
                waiter.progress_queued += 1
                if self._queue(_report_progress, waiter, update) is False:  # the worker is gone
                    waiter.progress_queued -= 1
            else:  # the callback is far behind: keep only the newest of the updates past the queue
                waiter.progress_overflow = update
        return True

    # ------------------------------------------------------------------ sending

    def _check_open(self, *, answerable: bool = True) -> None:
        if not self.sending or (answerable and self.eof):
            raise ConnectionClosed("the session is closed")

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (still possible after the peer's EOF, while handlers finish)."""
        self._check_open(answerable=False)
        await self._send(core.encode_notification(method, params))

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """Send a request and return its result (``Session.request`` documents the outcomes)."""
        self._check_open()
        waiter = Pending(method, self.timeout if timeout is None else timeout, on_progress)
        rid = self._pending.allocate(waiter)
        self._expect_answer()
        token: Id | None = None
        try:
            if on_progress is not None:
                params, token = with_progress_token(params, rid)
                self._progress[token] = waiter
            frame = core.encode_request(rid, method, params)
            waiter.arm(max_timeout)
            started = anyio.current_time()
            with waiter.scope or nullcontext():  # the deadline covers the writer too: max_timeout holds
                await self._send(frame)
                await waiter.event.wait()
            if not waiter.event.is_set():
                self._cancel_remote(rid, "timeout")
                elapsed = anyio.current_time() - started
                raise RequestTimeout(f"Request timed out: {method} (no response after {elapsed:.3g} s)")
            return waiter.outcome()
        except anyio.get_cancelled_exc_class():
            if waiter.message is None and not waiter.event.is_set():  # a held answer is in: nothing to cancel
                self._cancel_remote(rid, "cancelled by the requester")
            raise
        finally:
            self._pending.pop(rid, None)
            self._held.discard(waiter)
            if token is not None and self._progress.get(token) is waiter:
                del self._progress[token]

    def _cancel_remote(self, rid: Id, reason: str) -> None:
        if self.sending and not self.eof:
            params = {"requestId": rid, "reason": reason}
            self._write(core.encode_notification(NOTIFICATIONS_CANCELLED, params))
