"""Where a worker thread's finished calls go back to their event loop: the call's future and the loop's inbox.

A sync handler's call (``_threads.WorkerPool``) is one ``Waiter``: the job a worker runs, its outcome, and
the future its caller awaits. A worker puts the finished call in its loop's ``Inbox``; the first call of a
batch rings the loop's bell (``Bell``: an eventfd, else a socket pair, watched with ``loop.add_reader``),
and the loop settles the whole batch, resuming each waiting task directly. The bell replaces
``loop.call_soon_threadsafe``: no handle made per wake-up, and one read that empties it where asyncio's
self-pipe reads until a raised ``BlockingIOError`` (~5 % of a `def` tool's HTTP call, benches/README.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import socket
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import anyio.lowlevel

__all__ = ["Bell", "Inbox", "Waiter", "inbox_of"]


class Waiter(asyncio.Future[Any]):
    """One call: its job (what a worker runs), its outcome, and the future its caller awaits.

    A plain future schedules its callbacks (the awaiting task's wake-up) for the next loop iteration; this
    one keeps the first callback aside and the inbox runs it directly when it settles the batch. Cancelling
    it schedules that callback as usual, and any further callbacks are an ordinary future's. The job rides
    on the future itself (no tuple per call: fewer objects for the cyclic GC while thousands are in flight).
    ``WorkerPool.start`` makes them and sets ``_wake``; a worker sets ``_value`` and ``_error``.
    """

    __slots__ = (
        "_args",
        "_context",
        "_error",
        "_fn",
        "_inbox",
        "_kwargs",
        "_value",
        "_wake",
        "_wake_context",
    )
    _wake: Callable[[Any], object] | None
    _wake_context: contextvars.Context
    _inbox: Inbox
    _context: contextvars.Context
    _fn: Callable[..., Any]
    _args: tuple[Any, ...]
    _kwargs: dict[str, Any]
    _value: Any
    _error: BaseException | None

    def add_done_callback(
        self, fn: Callable[[Any], object], *, context: contextvars.Context | None = None
    ) -> None:
        if self._wake is None and not self.done():
            self._wake = fn
            self._wake_context = contextvars.copy_context() if context is None else context
        else:
            super().add_done_callback(fn, context=context)

    def remove_done_callback(self, fn: Callable[[Any], object]) -> int:
        removed = super().remove_done_callback(fn)
        if self._wake is not None and self._wake == fn:
            self._wake = None
            removed += 1
        return removed

    def cancel(self, msg: Any | None = None) -> bool:
        if not super().cancel(msg):
            return False
        wake = self._wake
        if wake is not None:  # scheduled, as a plain future schedules its callbacks
            self._wake = None
            self.get_loop().call_soon(wake, self, context=self._wake_context)
        return True


class Bell:
    """What wakes one event loop from a worker thread: ``ring`` (any thread), ``clear`` (on the loop).

    An eventfd where the OS has one, else a socket pair; its descriptors close with it (once nothing can
    ring it any more: every call holds its inbox, which holds the bell).
    """

    __slots__ = ("_fds", "_socks", "clear", "fd", "ring")

    def __init__(self) -> None:
        self._fds: tuple[int, ...] = ()
        self._socks: tuple[socket.socket, ...] = ()
        self.ring: Callable[[], object]
        self.clear: Callable[[], object]
        if hasattr(os, "eventfd"):
            self.fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self._fds = (self.fd,)
            self.ring = functools.partial(os.eventfd_write, self.fd, 1)
            self.clear = functools.partial(os.eventfd_read, self.fd)
        else:  # pragma: no cover - Linux has eventfd
            reader, writer = socket.socketpair()
            reader.setblocking(False)
            writer.setblocking(False)
            self._socks = (reader, writer)
            self.fd = reader.fileno()
            self.ring = functools.partial(writer.send, b"\0")
            self.clear = functools.partial(reader.recv, 64)

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        for sock in self._socks:  # pragma: no cover - Linux has eventfd
            sock.close()
        self._fds, self._socks = (), ()

    def __del__(self) -> None:
        with contextlib.suppress(OSError, TypeError, AttributeError):  # at exit `os` may be gone already
            self.close()


def bell_for(loop: asyncio.AbstractEventLoop, drain: Callable[[], None]) -> Bell | None:
    """A bell that runs ``drain`` on ``loop`` when rung; ``None`` for a loop that watches no descriptors
    (Windows' proactor: ``call_soon_threadsafe`` then)."""
    bell = Bell()
    try:  # in an empty context: the reader's handle keeps a copy of it for the loop's life, and the first
        # caller's (a request's context variables) must not be kept that long
        contextvars.Context().run(loop.add_reader, bell.fd, drain)
    except NotImplementedError:  # pragma: no cover - selector loops watch descriptors
        bell.close()
        return None
    return bell


class Inbox:
    """Calls done for one event loop: the first one of a batch wakes the loop, which settles them all.

    One per loop (``inbox_of``), whatever the pools: it holds its bell (watched by the loop) and the loop
    only weakly, so a loop that is gone takes its inbox and the bell's descriptors with it.
    """

    __slots__ = ("__weakref__", "_bell", "_clear", "_items", "_lock", "_loop", "_ring", "_waking", "token")

    def __init__(self, loop: asyncio.AbstractEventLoop, token: object) -> None:
        try:
            self._loop: Callable[[], asyncio.AbstractEventLoop | None] = weakref.ref(loop)
        except TypeError:  # pragma: no cover - a loop class without weak references: held for good
            self._loop = functools.partial(_same, loop)
        self.token = token
        self._items: list[Waiter] = []
        self._lock = threading.Lock()
        self._waking = False
        self._bell = bell_for(loop, self._drain)
        self._ring: Callable[[], object]
        self._clear: Callable[[], object] | None
        if self._bell is None:  # pragma: no cover - selector loops watch descriptors
            self._ring, self._clear = functools.partial(_wake_soon, self._loop, self._drain), None
        else:
            self._ring, self._clear = self._bell.ring, self._bell.clear

    def put(self, call: Waiter) -> None:
        lock = self._lock
        lock.acquire()  # not `with`: no bound __enter__/__exit__ made per call (a worker thread's, where
        # no KeyboardInterrupt comes between the acquire and the `try`)
        try:
            self._items.append(call)
            if self._waking:
                return
            self._waking = True
        finally:
            lock.release()
        self._ring()  # the loop's bell: one wake-up for the batch

    def _drain(self) -> None:
        clear = self._clear
        if clear is not None:
            try:  # emptied before the batch is taken: a ring after the take wakes the loop again
                clear()
            except BlockingIOError:  # woken otherwise (`_requeue`): nothing rang, nothing to read
                clear = None
        with self._lock:
            items, self._items, self._waking = self._items, [], False
        pending: Iterator[Waiter] = iter(items)
        try:
            for call in pending:
                if call.done():  # cancelled meanwhile: the result is dropped
                    continue
                error = call._error
                if error is None:
                    call.set_result(call._value)
                else:
                    call._error = None
                    call.set_exception(error)
                wake = call._wake
                if wake is not None:  # the awaiting task: resume it now
                    call._wake = None
                    call._wake_context.run(wake, call)
        except BaseException:  # a resumed task let KeyboardInterrupt/SystemExit out: settle the rest later
            self._requeue(list(pending))
            raise

    def _requeue(self, rest: list[Waiter]) -> None:
        loop = self._loop()
        if not rest or loop is None:
            return
        with self._lock:
            self._items[:0] = rest
            if not self._waking:
                self._waking = True
                loop.call_soon(self._drain)


def _same(loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
    return loop  # pragma: no cover - see `Inbox.__init__`


def _wake_soon(ref: Callable[[], asyncio.AbstractEventLoop | None], drain: Callable[[], None]) -> None:
    """Run ``drain`` on the loop (``call_soon_threadsafe``), unless it is gone or closed."""
    loop = ref()
    if loop is None:
        return
    try:  # not contextlib.suppress, a context manager per call
        loop.call_soon_threadsafe(drain)
    except RuntimeError:  # a closed loop: nobody is waiting any more
        return


_INBOXES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.ref[Inbox]]
_INBOXES = weakref.WeakKeyDictionary()
"""Each loop's inbox, held weakly on both sides: the inbox holds its loop's anyio token (which holds the
loop), and the loop holds the inbox (its bell's reader) until it closes."""


def inbox_of(loop: asyncio.AbstractEventLoop) -> Inbox:
    """``loop``'s inbox, made (with its bell) on first use; asked on ``loop``'s thread only."""
    try:
        known = _INBOXES.get(loop)
    except TypeError:  # pragma: no cover - a loop class without weak references: an inbox per pool
        return Inbox(loop, anyio.lowlevel.current_token())
    inbox = None if known is None else known()
    if inbox is None:
        inbox = Inbox(loop, anyio.lowlevel.current_token())
        _INBOXES[loop] = weakref.ref(inbox)
    return inbox
