"""``Outgoing``: the Session's own requests to the peer, and what answers them.

The Session owns one ``Outgoing``, built with what it truly needs from the Session: ``write`` (queue a frame
now, for ``notifications/cancelled``), ``send`` (queue a frame and wait while the outbox is full: the
back-pressure our senders feel), ``queue`` (hand a progress callback to the Session's job worker, so it runs
in arrival order and never in the reader) and ``expect_answer`` (a request was just allocated: its answer is
somewhere in the unread input, so reading must go on). It owns the rest: the core ``Correlator`` that gives
ids and finds the waiter of a response, the ``Pending`` waiter of each request (its deadline, its progress
callback), the progress-token table, ``notifications/cancelled`` sent on timeout or cancellation, and failing
every waiter when the connection ends. The Session tells it when sending stops (``stop_sending``), when the
peer's input has ended (``end_of_input``) and when everything is over (``close``).
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
        "hard_deadline",
        "message",
        "method",
        "on_progress",
        "progress_overflow",
        "progress_queued",
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
        """The response arrived."""
        self.message = message
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
    """Call ``waiter``'s progress callback with ``update``, then with the newest overflowed one, if any."""
    waiter.progress_queued -= 1
    callback = waiter.on_progress
    assert callback is not None
    outcome = callback(*update)
    if inspect.isawaitable(outcome):
        await outcome
    if waiter.progress_queued == 0 and waiter.progress_overflow is not None:
        newest, waiter.progress_overflow = waiter.progress_overflow, None
        outcome = callback(*newest)
        if inspect.isawaitable(outcome):
            await outcome


class Outgoing:
    """The outgoing half of a JSON-RPC peer: requests, notifications, and what answers them (module doc)."""

    __slots__ = (
        "_expect_answer",
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
        queue: Callable[..., None],
        expect_answer: Callable[[], None],
        max_pending: int,
        timeout: float | None,
    ) -> None:
        self._write = write
        self._send = send
        self._queue = queue
        self._expect_answer = expect_answer
        self._pending = core.Correlator(max_pending=max_pending)
        self._progress: dict[Id, Pending] = {}
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
            logger.warning("error response without an id: %r", message.error)
            return
        waiter = self._pending.pop(rid, None)
        if waiter is None:
            logger.debug("ignoring a response for id %r: no request is waiting for it", rid)
            return
        assert isinstance(waiter, Pending)
        waiter.resolve(message)

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
        assert isinstance(params, dict)
        waiter.extend()
        progress = params.get("progress")
        if waiter.on_progress is not None and isinstance(progress, int | float):
            update = (progress, params.get("total"), params.get("message"))
            if waiter.progress_queued < PROGRESS_QUEUE:
                waiter.progress_queued += 1
                self._queue(_report_progress, waiter, update)
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
            if not waiter.event.is_set():
                self._cancel_remote(rid, "cancelled by the requester")
            raise
        finally:
            self._pending.pop(rid, None)
            if token is not None and self._progress.get(token) is waiter:
                del self._progress[token]

    def _cancel_remote(self, rid: Id, reason: str) -> None:
        if self.sending and not self.eof:
            params = {"requestId": rid, "reason": reason}
            self._write(core.encode_notification(NOTIFICATIONS_CANCELLED, params))
