"""``Request``: what a request handler receives, one per incoming request."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpframe._api import Id, MessageLike
from mcpframe._unstable.anyio_tasks import SHIELD_AWARE, in_shield
from mcpframe.protocol import NOTIFICATIONS_PROGRESS, PROGRESS_TOKEN
from mcpframe.session.errors import JSONRPCError
from mcpframe.session.frames import failure_frame

if TYPE_CHECKING:
    from mcpframe.session.batch import Batch
    from mcpframe.session.peer import Session

__all__ = ["ProgressCallback", "Request"]

ProgressCallback = Callable[[float, float | None, str | None], Any]
"""``on_progress(progress, total, message)``; may return an awaitable."""


def _progress_token(session: Session, message: MessageLike, meta: dict[str, Any]) -> Id | None:
    """``_meta.progressToken`` when it is a string or an integer. Any other value (an array, an object, a
    boolean, a float) is ignored, as an odd ``_meta`` is: the request runs and no progress is sent for it,
    but the session's rejection log (rate-limited) says so; a null token is taken as none, silently."""
    token = meta.get(PROGRESS_TOKEN)
    if isinstance(token, int | str) and not isinstance(token, bool):
        return token
    if token is not None:
        session._ignored(
            message.offset,
            "ignored the progressToken of request %r (id %r): %s, not a string or an integer (no progress"
            " is sent for it)",
            message.method,
            message.id,
            _kind(token),
        )
    return None


def _kind(value: object) -> str:
    """A JSON value's kind, as a message names it."""
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", float: "a float"}.get(type(value), type(value).__name__)


_SHIELD_POLL = 0.005

IN_SCOPE: Final[bool] = not SHIELD_AWARE
"""Whether each handler runs in a cancel scope of its own (``Request._call_in_scope``): decided once, at
import, so the default path awaits the handler with no frame in between."""

Handler = Callable[["Request"], Awaitable[Any]]


class Request:
    """One incoming request: its id, method, params and ``_meta``, and the means to answer around it."""

    __slots__ = (
        "_aborted",
        "_batch",
        "_cancelled",
        "_done",
        "_scope",
        "_started",
        "_task",
        "_waiter",
        "id",
        "message",
        "meta",
        "method",
        "params",
        "progress_token",
        "session",
    )

    def __init__(self, session: Session, message: MessageLike, batch: Batch | None = None) -> None:
        self.session = session
        self.message = message
        rid = message.id
        method = message.method  # each read once: the message's fields are properties
        assert rid is not None
        assert method is not None
        self.id: Id = rid
        self.method: str = method
        self.params: Any = message.params
        params = self.params
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict):
            self.meta: dict[str, Any] = {}
            self.progress_token: Id | None = None
        else:
            self.meta = meta
            # most `_meta` carry no token (every 2026-07-28 request has a `_meta`): no call for those
            self.progress_token = _progress_token(session, message, meta) if PROGRESS_TOKEN in meta else None
        self._task: asyncio.Task[None] | None = None  # set by the Session right after creating it
        self._cancelled = False
        self._started = False
        self._done = False
        self._batch = batch
        self._scope: anyio.CancelScope | None = None  # the public path's scope around the handler
        self._aborted: JSONRPCError | None = None  # see abort()
        self._waiter: asyncio.Event | None = None  # see wait_done(): made by the first waiter

    def __repr__(self) -> str:
        return f"Request(id={self.id!r}, method={self.method!r})"

    @property
    def cancelled(self) -> bool:
        """Whether ``notifications/cancelled`` arrived for this request (its handler is being cancelled)."""
        return self._cancelled

    @property
    def done(self) -> bool:
        """Whether the handler has finished (answered, failed or been cancelled)."""
        return self._done

    def cancel(self) -> None:
        """Cancel the handler; no response will be sent.

        A handler that has not started yet never runs. One inside a shielded anyio cancel scope is cancelled
        once it has left the shield.
        """
        if self._cancelled:
            return
        self._cancelled = True
        self._deliver_cancel()

    def abort(self, error: JSONRPCError) -> None:
        """Cancel the handler and answer the request with ``error`` (e.g. a server stopping says why).

        The handler is cancelled as ``cancel`` cancels it (one inside a shielded anyio cancel scope once it
        has left the shield) and sees one ``CancelledError``; the Session then answers ``error`` in its
        place. Nothing happens once the request is done, cancelled or aborted; one that has not started yet
        is left to start (and answer) as usual: no error is kept for it, so a cancellation from elsewhere
        later (the Session's end) is never taken for this one.
        """
        if self._done or self._cancelled or self._aborted is not None:
            return
        task = self._task
        if not self._started or task is None or task.done():  # no cancel would be delivered
            return
        self._aborted = error
        self._deliver_cancel()

    def _cancelled_answer(self, cancel: asyncio.CancelledError) -> bytes | None:
        """The answer of a handler that ended in ``cancel``: none for the peer's cancel (``cancel``),
        ``abort``'s error for ours; any other (the loop's, the Session's end) is raised again. ``abort``'s
        ``Task.cancel()`` is withdrawn: the task answers, and goes on, as an uncancelled one would."""
        if self._cancelled:
            return None
        error = self._aborted
        if error is None:
            raise cancel
        task = self._task
        if self._scope is None and task is not None:
            task.uncancel()
        return failure_frame(self, error)  # as a handler's own error: ``data`` it cannot encode is dropped

    async def wait_done(self) -> None:
        """Wait until the handler has finished (``done``)."""
        if self._done:
            return
        waiter = self._waiter
        if waiter is None:
            waiter = self._waiter = asyncio.Event()
        await waiter.wait()

    def _deliver_cancel(self) -> None:
        """``Task.cancel()``, held back while the handler is shielded (checked every ``_SHIELD_POLL`` s).

        That needs anyio's private task records (``mcpframe._unstable.anyio_tasks``); without them the
        handler runs in a cancel scope of its own (``_call_in_scope``), which anyio cancels past any shield.
        """
        task = self._task
        if not self._started or self._done or task is None or task.done():
            return
        scope = self._scope
        if scope is not None:
            scope.cancel()
            return
        if in_shield(task):
            task.get_loop().call_later(_SHIELD_POLL, self._deliver_cancel)
            return
        task.cancel()

    async def _call_in_scope(self, handler: Handler) -> Any:
        """``handler(self)`` inside a cancel scope that ``cancel`` uses: how the Session runs a handler
        without anyio's private records (``IN_SCOPE``); otherwise it awaits ``handler(self)`` itself."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            return await handler(self)
        raise asyncio.CancelledError  # our scope caught the cancellation: end as a cancelled handler would

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request's token (nothing without a token or once done)."""
        if self.progress_token is None or self._done:
            return
        params: dict[str, Any] = {PROGRESS_TOKEN: self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.session.notify(NOTIFICATIONS_PROGRESS, params)

    async def send_notification(self, method: str, params: Any = None) -> None:
        """Send a notification related to this request (nothing once it is done).

        A transport may reuse one Session for many requests (HTTP lanes), so a late notification from a
        background task must not land on whatever request that Session serves next.
        """
        if self._done:
            return
        await self.session.notify(method, params)

    async def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """Send a request to the peer while handling this one (e.g. sampling) and return its result.

        ``RuntimeError`` once this request is done: its answer has gone, nothing could relate to it.
        """
        if self._done:
            raise RuntimeError(f"request {self.id!r} is done: no related request can be sent for it")
        return await self.session.request(
            method, params, timeout=timeout, on_progress=on_progress, max_timeout=max_timeout
        )
