"""asyncio's private task bookkeeping: switching the current task, and the running loop without a raise.

Private path (CPython 3.11, 3.12 and 3.13, read and tested on each): ``asyncio.tasks._enter_task`` /
``_leave_task`` / ``_current_tasks`` let the Session's eager start (``session/eager.py``) run a handler's
first step as a host task made for it in advance, with no task scheduled when the handler finishes there;
``asyncio._get_running_loop`` answers "which loop, if any" without the exception
``asyncio.get_running_loop`` raises off a loop. On 3.14 the current task moved to the thread state and these
names changed meaning, hence the exact list.

Public fallback: ``asyncio.eager_task_factory`` (3.12+: a real task per handler, whose first step runs
before it is scheduled; no task scheduled either when the handler finishes there), or on 3.11 no eager
start at all (each handler gets an ordinary task); ``asyncio.get_running_loop`` in a ``try``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any, Final

from mcpframe._unstable import Choice, decide

__all__ = [
    "CHOICE",
    "PUBLIC_EAGER",
    "SwitchTask",
    "current_task",
    "enter_task",
    "leave_task",
    "running_loop",
]

VERIFIED: Final = ((3, 11), (3, 13))
"""CPython minor versions whose private task bookkeeping this module was read and tested against."""

CHOICE: Final[Choice] = decide("Python", sys.version_info[:2], *VERIFIED)

SwitchTask = Callable[[asyncio.AbstractEventLoop, "asyncio.Task[Any]"], None]

EagerFactory = Callable[[asyncio.AbstractEventLoop, Coroutine[Any, Any, Any]], "asyncio.Task[Any]"]

PUBLIC_EAGER: Final[EagerFactory | None] = getattr(asyncio, "eager_task_factory", None)
"""The public eager task factory (Python 3.12+), or None."""


def _running_loop_public() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _current_task_public(loop: asyncio.AbstractEventLoop) -> asyncio.Task[Any] | None:
    return asyncio.current_task(loop)


running_loop: Callable[[], asyncio.AbstractEventLoop | None]
"""The running event loop of this thread, or None (never raises)."""

current_task: Callable[[asyncio.AbstractEventLoop], asyncio.Task[Any] | None]
"""The task ``loop`` is running now, or None."""

enter_task: SwitchTask | None
"""Make a task ``loop``'s current one (private path only)."""

leave_task: SwitchTask | None
"""Undo ``enter_task`` (private path only)."""

if CHOICE.private:
    running_loop = asyncio._get_running_loop
    enter_task = asyncio.tasks._enter_task
    leave_task = asyncio.tasks._leave_task
    current_task = asyncio.tasks._current_tasks.get  # type: ignore[attr-defined]
else:
    running_loop = _running_loop_public
    current_task = _current_task_public
    enter_task = leave_task = None
