"""``Requester``: the Session's own requests to the peer, as a mixin of ``Session`` (``session/peer.py``).

It owns the outgoing side of the peer: ``request()`` and ``notify()``, the correlation of the peer's
responses with the requests waiting for them (the core ``Correlator``, ``Pending`` waiters), progress
notifications for those requests (timeout extension, ``on_progress`` callbacks), ``notifications/cancelled``
sent on timeout or cancellation, and failing every waiter when the connection ends. The tables it reads
(``_pending``, ``_progress``) and the writing and queueing it uses (``_write``, ``_send``, ``_queue``) are
created and defined by ``Session``; this class only declares them. The incoming side (reading, dispatch,
running handlers) stays in ``Session``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import anyio

from mcpframe import core
from mcpframe._api import MessageLike
from mcpframe.session.errors import ConnectionClosed, RequestTimeout
from mcpframe.session.outgoing import Pending, with_progress_token
from mcpframe.session.request import ProgressCallback

if TYPE_CHECKING:
    from mcpframe.session.intake import Intake

__all__ = ["Requester", "is_id"]

logger = logging.getLogger("mcpframe.session")

Id = int | str


PROGRESS_QUEUE = 64
"""Progress callbacks queued per request at most. A callback that keeps up sees every update; one that falls
further behind sees the queued ones and then only the newest of the rest (progress only grows), so a peer
flooding progress cannot grow our memory."""


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


def is_id(value: object) -> bool:
    """Whether ``value`` may be a JSON-RPC id (an int or a str, never a bool)."""
    return isinstance(value, int | str) and not isinstance(value, bool)


class Requester:
    """The outgoing half of a JSON-RPC peer: requests, notifications, and what answers them."""

    closed: bool
    default_timeout: float | None
    _pending: core.Correlator
    _progress: dict[Id, Pending]
    _eof: bool
    _broken: bool
    _intake: Intake

    if TYPE_CHECKING:  # defined by Session

        def _write(self, frame: bytes) -> None: ...

        async def _send(self, frame: bytes) -> None: ...

        def _queue(self, func: Callable[..., Any], *args: Any) -> None: ...

    @property
    def pending(self) -> int:
        """Outgoing requests waiting for a response."""
        return len(self._pending)

    @property
    def progress_waiters(self) -> int:
        """Outgoing requests listening for progress."""
        return len(self._progress)

    def _fail_pending(self, exc: BaseException) -> None:
        for _, waiter in self._pending.drain():
            assert isinstance(waiter, Pending)
            waiter.fail(exc)

    # ------------------------------------------------------------------ what answers our requests

    def _on_progress(self, params: Any) -> bool:
        """Progress for one of our requests: extend its timeout and call its callback."""
        token = params.get("progressToken") if isinstance(params, dict) else None
        waiter = self._progress.get(token) if is_id(token) else None  # type: ignore[arg-type]
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

    def _on_response(self, message: MessageLike) -> None:
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

    # ------------------------------------------------------------------ sending

    def _check_open(self, *, reading: bool = True) -> None:
        if self.closed or self._broken or (reading and self._eof):
            raise ConnectionClosed("the session is closed")

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (still possible after the peer's EOF, while handlers finish)."""
        self._check_open(reading=False)
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
        """Send a request and return its result.

        Raises ``JSONRPCError`` for an error response, ``RequestTimeout`` when ``timeout`` (default:
        ``default_timeout``) passes without a response or progress, or ``max_timeout`` passes at all,
        ``ConnectionClosed`` when the connection ends first. On timeout or cancellation of the caller,
        ``notifications/cancelled`` is sent to the peer.
        """
        self._check_open()
        waiter = Pending(method, self.default_timeout if timeout is None else timeout, on_progress)
        rid = self._pending.allocate(waiter)
        if not self._intake.reading:  # the answer is in the unread input: read on despite a backlog
            self._intake.steer()
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
        if not (self.closed or self._eof or self._broken):
            params = {"requestId": rid, "reason": reason}
            self._write(core.encode_notification("notifications/cancelled", params))
