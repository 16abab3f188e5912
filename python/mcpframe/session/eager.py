"""Eager handler start: Python 3.12's eager tasks, on 3.11 and without a Task per request.

A request handler's first step runs at once, inside the reader's dispatch, but *as a task of its own*: for
that step ``asyncio.current_task()`` is a host task made for it in advance (idle, parked on a future), and
the step runs in a fresh copy of the context. Most handlers finish in that step (nothing to wait for):
then no task was scheduled at all and the same idle host serves the next handler. A handler that suspends
is handed to its host, which resumes it exactly where it stopped (same coroutine, same context, the same
future it was waiting on), so whatever it bound to ``current_task()`` in its first step (anyio cancel
scopes and task groups, ``asyncio.timeout``) belongs to the task that runs the rest of it and that the
Session cancels. The host takes over at once (its wake-up is run there and then: what the handler waits on
is waited on as its own task would, and a bare yield costs one loop turn, not two), and the next idle host
is a spare or a new one. With ``reuse`` (a Session's starter) a host whose handler returned goes back to
idle as a spare rather than ending, unless a cancel of it is still counted: once warm, a handler that
suspends makes no task (~25k instructions per call less for an ``async def`` tool that suspends once).

A host whose handler cancelled its own task during an inline step is retired rather than reused (the
pending cancellation must not land in another handler; nor may the next handler be handed to a host whose
wait that cancel ended, though the handler uncancelled). One that did so and then suspended is still
handed to that host: the cancel went into the future the host was parked on, so the host asks for it again
once it waits on what the handler waits on, and the handler goes on as it would in a task of its own.

Switching the current task is private asyncio API (``mcpframe._unstable.asyncio_tasks``, verified on
3.11 to 3.13). Where that module takes its public path, a handler instead gets a task of its own from
``asyncio.eager_task_factory`` (3.12+; same semantics, one task per handler), and on 3.11 there is no eager
start (``AVAILABLE`` is False: the Session spawns an ordinary task per handler).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from typing import Any

from mcpframe._unstable import asyncio_tasks
from mcpframe.session.frames import Spawner

__all__ = ["AVAILABLE", "HOSTED", "EagerStarter"]

HOSTED = asyncio_tasks.CHOICE.private
"""Whether handlers start on reusable host tasks (the private path); else on public eager tasks."""

_PUBLIC_EAGER = asyncio_tasks.PUBLIC_EAGER
_enter_task, _leave_task = asyncio_tasks.enter_task, asyncio_tasks.leave_task
_current_task = asyncio_tasks.current_task
_step_now = asyncio_tasks.step_now

AVAILABLE = HOSTED or _PUBLIC_EAGER is not None
"""Whether handlers can start eagerly here (False on 3.11 without the private path: no eager start)."""

_Adoption = tuple[Coroutine[Any, Any, None], contextvars.Context, Any]

_SPARE = 32
"""At most this many idle hosts kept back from handlers (as many as suspended at once, up to this)."""


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


class _Host:
    """An idle task parked on ``adoption``: it runs the rest of a handler that suspended (``None``: retire).

    Only a host that has started (is parked inside its ``try``) is used: a cancellation that reaches it
    before its handler's next step then goes into that handler, never past it.
    """

    __slots__ = ("adoption", "self_cancelled", "started", "starter", "task")

    def __init__(self, loop: asyncio.AbstractEventLoop, starter: EagerStarter | None = None) -> None:
        self.started = False
        self.self_cancelled: _Adoption | None = None
        """A handler whose first step cancelled this task: ``adoption`` took that cancel, not its result."""
        self.starter = starter
        """Where it goes back to idle once its handler is done (``_rejoin``); ``None``: it ends then."""
        self.adoption: asyncio.Future[_Adoption | None] = loop.create_future()
        self.task: asyncio.Task[None] = loop.create_task(self._run())

    async def _run(self) -> None:
        self.started = True
        while True:
            adoption = self.adoption
            try:
                adopted = await adoption
            except asyncio.CancelledError as exc:
                if self.self_cancelled is not None:
                    self._cancel_again(exc)
                    await _Resume(self.self_cancelled, None)
                    return
                if not adoption.done() or adoption.cancelled() or (handed := adoption.result()) is None:
                    raise
                await _Resume(handed, exc)
                return
            if adopted is None:
                return
            await _Resume(adopted, None)
            adopted = None  # an idle host keeps nothing of its last handler (its context, its values)
            if not self._rejoin():
                return

    def _rejoin(self) -> bool:
        """Its handler returned: idle again, parked on a new ``adoption`` among its starter's spare hosts,
        unless the starter closed, has spares enough, or a cancel of this task is still counted (what a
        cancel left behind must not reach the next handler): then it ends, as a task of its own would."""
        starter = self.starter
        task = self.task
        if starter is None or starter.closed or task.cancelling() or len(starter._spare) >= _SPARE:
            return False
        self.adoption = task.get_loop().create_future()
        starter._spare.append(self)
        return True

    def _cancel_again(self, taken: asyncio.CancelledError) -> None:
        """Ask again for the cancel that ``taken`` delivered here, to land where the handler waits.

        A task cancelled while it runs cancels what it waits on next, then throws into its coroutine.
        ``cancelling()`` already counts the handler's own cancels (and any made since), less those it
        uncancelled, so ``uncancel`` right after keeps that count. Where an ``uncancel`` brings it to 0,
        3.13 also drops the pending cancel, as it did in the handler's own task (3.11 and 3.12 keep it,
        as they did there too).
        """
        task = self.task
        task.cancel(taken.args[0] if taken.args else None)
        task.uncancel()


class EagerStarter:
    """Starts handler coroutines eagerly on ``loop`` (see the module doc); ``spawn`` when it cannot."""

    __slots__ = ("_host", "_loop", "_spare", "_spawn", "closed", "reuse")

    def __init__(self, loop: asyncio.AbstractEventLoop, spawn: Spawner, *, reuse: bool = False) -> None:
        self._loop = loop
        self._spawn = spawn
        self.reuse = reuse
        """Whether a host whose handler is done goes back to idle (``_Host._rejoin``) rather than ending:
        no task made per handler that suspends. Only for a caller that never holds on to the tasks
        ``start`` returns past their handler's end (a Session, whose requests drop theirs when done)."""
        self.closed = False
        self._spare: list[_Host] = []  # idle hosts back from a handler, parked: the next to take over
        self._host: _Host | None = self._new_host() if HOSTED else None

    def _new_host(self) -> _Host:
        return _Host(self._loop, self if self.reuse else None)

    def start(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """Run ``coro``'s first step now; ``None`` if it finished, else the task that runs the rest of it.

        While no started host is idle (right after one was taken, until the loop has run the new one),
        ``coro`` gets a task of its own the ordinary way.
        """
        if not HOSTED:
            return self._start_public(coro)
        loop = self._loop
        host = self._host
        if host is None or not host.started:
            if host is None and not self.closed:
                self._host = self._new_host()
            return self._spawn(coro)
        task = host.task
        ctx = contextvars.copy_context()
        enter, leave = _enter_task, _leave_task  # inline, not switch_task(): this runs once per request
        assert enter is not None
        assert leave is not None
        current = _current_task(loop)
        if current is not None:
            leave(loop, current)
        enter(loop, task)
        try:
            yielded = ctx.run(coro.send, None)
            finished = False
        except (StopIteration, asyncio.CancelledError):  # done (or ended cancelled, as its own task would)
            finished = True
        finally:
            leave(loop, task)
            if current is not None:
                enter(loop, current)
        if finished:
            if task.cancelling() or host.adoption.done():
                # It cancelled its own task: that must not land in the next handler. ``adoption`` took
                # that cancel even where it then uncancelled (``cancelling()`` back at 0): the host
                # would wake cancelled, so a handler handed to it next would never run on.
                self._retire()
            return None
        if host.adoption.cancelled():  # it cancelled its own task (parked on adoption), then suspended
            host.self_cancelled = (coro, ctx, yielded)
        else:
            host.adoption.set_result((coro, ctx, yielded))
            # the host's wake-up now, not at the next iteration: it takes what the handler yielded as the
            # handler's own task would have as the step ended (waits on that future, or schedules its
            # next step for a bare yield), so a `sleep(0)` costs one loop iteration, not two
            _step_now(loop, task)
        self._host = self._take_spare() or self._new_host()
        return task

    def _take_spare(self) -> _Host | None:
        """The last spare host to go idle that can still take a handler (one cancelled meanwhile ends)."""
        spare = self._spare
        while spare:
            host = spare.pop()
            if not host.adoption.done() and not host.task.done():
                return host
        return None

    def _start_public(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """The public path: a task of its own whose first step runs now (``asyncio.eager_task_factory``)."""
        assert _PUBLIC_EAGER is not None
        task: asyncio.Task[None] = _PUBLIC_EAGER(self._loop, coro)
        return None if task.done() else task

    def close(self) -> list[asyncio.Task[None]]:
        """Retire the idle hosts (spares included) and start no more: hosts still running a handler end
        with it. The returned tasks (the idle hosts') end on their own at the next loop iteration."""
        self.closed = True
        spare, self._spare = self._spare, []
        ending = []
        for host in spare:
            if not host.adoption.done():
                host.adoption.set_result(None)
            ending.append(host.task)
        idle = self._retire()
        if idle is not None:
            ending.append(idle)
        return ending

    def _retire(self) -> asyncio.Task[None] | None:
        """Retire the idle host (if any); the returned task ends on its own at the next loop iteration."""
        host, self._host = self._host, None
        if host is None:
            return None
        if not host.adoption.done():
            host.adoption.set_result(None)
        return host.task
