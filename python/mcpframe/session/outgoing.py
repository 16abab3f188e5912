"""Bookkeeping of one outgoing request: its waiter, its deadline, its progress callback."""

from __future__ import annotations

import math
from typing import Any

import anyio

from mcpframe._api import MessageLike
from mcpframe.session.errors import ConnectionClosed, JSONRPCError
from mcpframe.session.request import ProgressCallback

__all__ = ["Pending", "with_progress_token"]

Id = int | str


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
    existing = meta.get("progressToken")
    if isinstance(existing, int | str) and not isinstance(existing, bool):
        return params, existing
    meta["progressToken"] = token
    return {**params, "_meta": meta}, token
