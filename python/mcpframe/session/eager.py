"""Eager handler start: Python 3.12's eager tasks, on 3.11 and without a Task per request.

A request handler's first step runs at once, inside the reader's dispatch, but *as a task of its own*: for
that step ``asyncio.current_task()`` is a host task made for it in advance (idle, parked on a future), and
the step runs in a fresh copy of the context. Most handlers finish in that step (nothing to wait for):
then no task was scheduled at all and the same idle host serves the next handler. A handler that suspends
is handed to its host, which resumes it exactly where it stopped (same coroutine, same context, the same
future it was waiting on), so whatever it bound to ``current_task()`` in its first step (anyio cancel
scopes and task groups, ``asyncio.timeout``) belongs to the task that runs the rest of it and that the
Session cancels. A new idle host is then made for the next handler.

A host whose handler cancelled its own task during an inline step is retired rather than reused (the
pending cancellation must not land in another handler).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from typing import Any

__all__ = ["EagerStarter"]

_enter_task = asyncio.tasks._enter_task
_leave_task = asyncio.tasks._leave_task
_current_tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] = asyncio.tasks._current_tasks  # type: ignore[attr-defined]

_Adoption = tuple[Coroutine[Any, Any, None], contextvars.Context, Any]


class _Resume:
    """Awaited by a host task: drive an already started coroutine on, from the value it last yielded."""

    __slots__ = ("coro", "ctx", "exc", "yielded")

    def __init__(self, adoption: _Adoption, exc: BaseException | None) -> None:
        self.coro, self.ctx, self.yielded = adoption
        self.exc = exc

    def __await__(self) -> Generator[Any, Any, None]:
        coro, ctx = self.coro, self.ctx
        exc, yielded = self.exc, self.yielded
        while True:
            if exc is None:
                try:
                    sent = yield yielded
                except GeneratorExit:
                    coro.close()
                    raise
                except BaseException as error:  # thrown in by the host task (a cancellation): pass it on
                    exc = error
                    continue
                step, arg = coro.send, sent
            else:
                step, arg, exc = coro.throw, exc, None
            try:
                yielded = ctx.run(step, arg)
            except StopIteration:
                return


async def _host(adoption: asyncio.Future[_Adoption | None]) -> None:
    """An idle host: wait for a handler to adopt (``None``: retire), then run the rest of it."""
    try:
        adopted = await adoption
    except asyncio.CancelledError as exc:
        if not adoption.done() or adoption.cancelled() or adoption.result() is None:
            raise
        await _Resume(adoption.result(), exc)  # type: ignore[arg-type]
        return
    if adopted is not None:
        await _Resume(adopted, None)


class EagerStarter:
    """Starts handler coroutines eagerly on ``loop`` (see the module doc)."""

    __slots__ = ("_adoption", "_host", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._host: asyncio.Task[None] | None = None
        self._adoption: asyncio.Future[_Adoption | None] | None = None

    def start(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """Run ``coro``'s first step now; ``None`` if it finished, else the task that runs the rest of it."""
        loop = self._loop
        host = self._host
        if host is None:
            self._adoption = loop.create_future()
            self._host = host = loop.create_task(_host(self._adoption))
        ctx = contextvars.copy_context()
        current = _current_tasks.get(loop)
        if current is not None:
            _leave_task(loop, current)
        _enter_task(loop, host)
        try:
            yielded = ctx.run(coro.send, None)
            finished = False
        except (StopIteration, asyncio.CancelledError):  # done (or ended cancelled, as its own task would)
            finished = True
        finally:
            _leave_task(loop, host)
            if current is not None:
                _enter_task(loop, current)
        if finished:
            if host.cancelling():
                self.close()  # it cancelled its own task: that must not land in the next handler
            return None
        assert self._adoption is not None
        self._adoption.set_result((coro, ctx, yielded))
        self._host = self._adoption = None
        return host

    def close(self) -> asyncio.Task[None] | None:
        """Retire the idle host (if any); the returned task ends on its own at the next loop iteration."""
        host, adoption = self._host, self._adoption
        self._host = self._adoption = None
        if adoption is not None and not adoption.done():
            adoption.set_result(None)
        return host
