"""anyio's private per-task records (is a task inside a shielded cancel scope?) and worker-thread token.

Private path (anyio 4.12 to 4.16: the code read in 4.12.0 and 4.16.0, the suite run on 4.16.0; 4.5 and 4.9
keep the thread token in another shape):

- ``in_shield(task)`` reads ``anyio._backends._asyncio._task_states`` (the task's innermost cancel scope) and
  walks ``CancelScope._parent_scope`` looking for ``shield``: the Session then holds a peer's cancellation
  back while the handler is shielded, and cancels the task with a plain ``Task.cancel()``.
- ``set_thread_token``/``clear_thread_token`` write ``anyio._core._eventloop.threadlocals.current_token``
  on mcpframe's own worker threads, so ``anyio.from_thread.run`` works inside a sync handler there as it does
  in anyio's own workers.
- ``pipe_transport(stream)`` reads the ``asyncio.StreamWriter`` anyio keeps under a process's ``stdin``
  (``StreamWriterWrapper._stream``): the listening proxy writes a frame to an idle child's pipe at once.

Public fallback: ``SHIELD_AWARE`` and ``THREAD_TOKEN`` are False. The Session then wraps each handler in an
anyio ``CancelScope`` of its own and cancels that scope (anyio itself waits for a shield to be left; one
scope per request costs a few microseconds), and the worker pool hands calls to ``anyio.to_thread``
(anyio's own worker threads, which carry the token; about a hundred microseconds per call);
``pipe_transport`` is the exception: it reads anyio's stream whatever the path (see its doc).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from mcpframe._unstable import Choice, decide, version_of

__all__ = [
    "CHOICE",
    "SHIELD_AWARE",
    "THREAD_TOKEN",
    "clear_thread_token",
    "in_shield",
    "pipe_transport",
    "set_thread_token",
]

VERIFIED: Final = ((4, 12), (4, 16))
"""The anyio minor versions this module's private names were read in (both ends inclusive)."""

CHOICE: Final[Choice] = decide("anyio", version_of("anyio"), *VERIFIED)

SHIELD_AWARE: Final[bool] = CHOICE.private
"""Whether ``in_shield`` can answer (else the caller must let anyio's own scopes honour shields)."""

THREAD_TOKEN: Final[bool] = CHOICE.private
"""Whether ``set_thread_token`` gives a foreign thread anyio's event-loop token."""

if CHOICE.private:
    from anyio._backends._asyncio import _task_states
    from anyio._core._eventloop import threadlocals as _threadlocals


def in_shield(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` is inside a shielded anyio cancel scope (only where ``SHIELD_AWARE``)."""
    state = _task_states.get(task)
    scope = getattr(state, "cancel_scope", None)
    while scope is not None:
        if scope.shield:
            return True
        scope = scope._parent_scope
    return False


def set_thread_token(token: object) -> None:
    """Make ``token`` (``anyio.lowlevel.current_token()``) this thread's (only where ``THREAD_TOKEN``)."""
    _threadlocals.current_token = token


def clear_thread_token() -> None:
    """Undo ``set_thread_token`` on this thread."""
    del _threadlocals.current_token


def pipe_transport(stream: object) -> asyncio.WriteTransport | None:
    """The asyncio transport under anyio's process stream ``stream`` (a ``Process.stdin`` on the asyncio
    backend); ``None`` where it has another shape (another backend or anyio). Not switched off by the
    public-only path yet: the listening proxy's fast path writes through it, and its public fallback (a
    stdin pipe of the proxy's own, as its stdout already is) is still to build."""
    writer = getattr(stream, "_stream", None)
    return writer.transport if isinstance(writer, asyncio.StreamWriter) else None
