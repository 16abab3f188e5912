"""asyncio's private task bookkeeping: switching the current task, and the running loop without a raise.

Private path (CPython 3.11, 3.12 and 3.13, read and tested on each): ``asyncio.tasks._enter_task`` /
``_leave_task`` / ``_current_tasks`` let the Session's eager start (``session/eager.py``) run a handler's
first step as a host task made for it in advance, with no task scheduled when the handler finishes there;
``asyncio._get_running_loop`` answers "which loop, if any" without the exception
``asyncio.get_running_loop`` raises off a loop; ``BaseEventLoop._ready`` (the deque of handles to run),
``Handle._callback`` and ``Handle._run`` let ``step_now`` run a task's first step, just scheduled, at once
(``http/fast.py``: a `def` tool's call reaches its worker thread in the loop iteration that read it). On 3.14
the current task moved to the thread state and these names changed meaning, hence the exact list.

Public fallback: ``asyncio.eager_task_factory`` (3.12+: a real task per handler, whose first step runs
before it is scheduled; no task scheduled either when the handler finishes there), or on 3.11 no eager
start at all (each handler gets an ordinary task); ``asyncio.get_running_loop`` in a ``try``; ``step_now``
does nothing (the task runs at the loop's next iteration, as scheduled).
"""

from __future__ import annotations

import asyncio
import collections
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
    "step_now",
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


def _step_now_public(loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> bool:
    return False


def _step_now_private(loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> bool:
    # the step a new task schedules is the last handle of the loop's ready queue until anything else is
    # scheduled: taken from there only if it is that one (another loop class, or a handle scheduled since,
    # and the task keeps its turn)
    ready = getattr(loop, "_ready", None)
    if type(ready) is not collections.deque or not ready:
        return False
    handle = ready[-1]
    if type(handle) is not asyncio.Handle or getattr(handle._callback, "__self__", None) is not task:  # type: ignore[attr-defined]
        return False
    ready.pop()
    current = current_task(loop)  # a task's step may start it (the wire server's `_run`): stepped aside
    if current is not None:
        asyncio.tasks._leave_task(loop, current)
    try:
        handle._run()  # as the loop would run it (an error in it goes to the loop's exception handler)
    finally:
        if current is not None:
            asyncio.tasks._enter_task(loop, current)
    return True


step_now: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], bool]
"""Run the first step of ``task``, created just now and not yet run, at once instead of at ``loop``'s next
iteration (as an eager task's); ``False`` (nothing done: it runs when scheduled) if that step is not the
last thing scheduled, or on the public path."""

if CHOICE.private:
    step_now = _step_now_private
    running_loop = asyncio._get_running_loop
    enter_task = asyncio.tasks._enter_task
    leave_task = asyncio.tasks._leave_task
    current_task = asyncio.tasks._current_tasks.get  # type: ignore[attr-defined]
else:
    running_loop = _running_loop_public
    current_task = _current_task_public
    enter_task = leave_task = None
    step_now = _step_now_public
