"""anyio's private per-task records (is a task inside a shielded cancel scope?) and worker-thread token.

Private path (anyio 4.12 to 4.16: the code read in 4.12.0 and 4.16.0, the suite run on 4.16.0; 4.5 and 4.9
keep the thread token in another shape):

- ``in_shield(task)`` reads ``anyio._backends._asyncio._task_states`` (the task's innermost cancel scope) and
  walks ``CancelScope._parent_scope`` looking for ``shield``: the Session then holds a peer's cancellation
  back while the handler is shielded, and cancels the task with a plain ``Task.cancel()``.
- ``set_thread_token``/``clear_thread_token`` write ``anyio._core._eventloop.threadlocals.current_token``
  on mcpframe's own worker threads, so ``anyio.from_thread.run`` works inside a sync handler there as it does
  in anyio's own workers.

Public fallback: ``SHIELD_AWARE`` and ``THREAD_TOKEN`` are False. The Session then wraps each handler in an
anyio ``CancelScope`` of its own and cancels that scope (anyio itself waits for a shield to be left; one
scope per request costs a few microseconds), and the worker pool hands calls to ``anyio.to_thread``
(anyio's own worker threads, which carry the token; about a hundred microseconds per call).

(The listening proxy used to read the asyncio transport anyio keeps under a child process's stdin, on
every path; it now makes that pipe itself and writes through ``loop.connect_write_pipe``, public asyncio:
``mcpframe.proxy.listen_input``.)
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from mcpframe._unstable import Choice, decide, version_of

__all__ = [
    "CHOICE",
    "SHIELD_AWARE",
    "THREAD_TOKEN",
    "TOKEN_HOLDER",
    "clear_thread_token",
    "in_shield",
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

TOKEN_HOLDER: Final[Any] = _threadlocals if CHOICE.private else None
"""The thread-local object whose ``current_token`` ``set_thread_token`` sets and ``clear_thread_token``
deletes (only where ``THREAD_TOKEN``): for a caller that does so once per call (the worker pool), with no
function call around each."""


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
