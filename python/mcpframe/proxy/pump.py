"""The thread pump: a thread per direction, blocked in `readv`, relaying plain frames without the event loop.

A call made alone through an event-loop proxy pays one loop turn per direction (readiness, callback,
write); a thread blocked in `readv` wakes straight into the relay and writes at once, which is what takes
the proxy's added latency under 50 µs (benches/README.md). What the loop still does, it does as before:
each chunk whose frames need a decision (held frames, an upstream to start, a client gone) is handed to
the event loop by the thread, which blocks until the loop is done with it. That blocking is also the
back-pressure: a slow destination blocks the thread writing to it, so it stops reading its source, whose
writes then block.

`ThreadWriter` is the `Writer` of a destination written by threads and the loop alike (both directions
and the proxy's own answers write to the client): one owner at a time writes a whole frame, and a loop
write the destination took only in part keeps it reserved until a worker thread wrote its rest, so frames
never interleave. Its fd stays non-blocking: the loop's `write_nowait` never waits, and a thread waits in
`poll` with a wake-up pipe, so `aclose` frees a thread stuck on a stalled peer.

POSIX pipes and sockets only (`usable`); elsewhere the proxy keeps the event-loop pump.
"""

from __future__ import annotations

import os
import select
import stat
import sys
import threading
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from mcpframe import core
from mcpframe.transports.base import RECEIVE_CHUNK, TransportClosedError

from .link import Writer

__all__ = ["GuardedIds", "Step", "ThreadPump", "ThreadWriter", "usable"]

Step = Callable[[bytes], Callable[[], Coroutine[Any, Any, None]] | None]
"""Handles one chunk in the pump's thread; what it returns (if anything) is run on the event loop, the
thread waiting for it."""


def usable(*fds: int) -> bool:
    """Whether the thread pump can drive these fds: POSIX pipes or sockets."""
    if sys.platform == "win32":
        return False
    try:
        return all(
            stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in (os.fstat(fd).st_mode for fd in fds)
        )
    except OSError:
        return False


class ThreadWriter(Writer):
    """Ordered, whole writes to one non-blocking pipe or socket, from threads (`write_blocking`) and from
    the event loop (`write_nowait`/`write_rest`, as `Writer`); `on_broken` is called on the loop the first
    time the peer is found gone.

    Who may write is decided under a short lock (`_state`, never held across a wait): a thread writes a
    whole frame only while no loop write is owed (one partly written, or queued behind one), so a loop
    frame's rest, finished by a worker thread, is never split by a thread's frame, and loop writes keep
    their order with the frames threads write after them."""

    __slots__ = (
        "_broken",
        "_closed",
        "_fd",
        "_held",
        "_held_rest",
        "_mutex",
        "_on_broken",
        "_owed",
        "_poll",
        "_state",
        "_token",
        "_wake",
        "_writing",
    )

    def __init__(self, fd: int, *, on_broken: Callable[[], object] | None = None) -> None:
        super().__init__(self._send_rest, self.try_write)
        self._fd = fd
        os.set_blocking(fd, False)
        self._mutex = threading.Lock()  # `_state`'s lock, taken alone where nothing waits (C-level `with`)
        self._state = threading.Condition(self._mutex)
        self._writing = False  # a thread is writing a frame (or a loop write's rest)
        self._held = False  # a loop write was partly written: its rest owns the destination
        self._held_rest: bytes | None = None  # that rest, as `write_nowait` returned it
        self._owed = 0  # loop writes whose rest is not written yet
        self._closed = False
        self._broken = False
        self._on_broken = on_broken
        self._token = anyio.lowlevel.current_token()
        self._wake = os.pipe()  # written by `aclose`: a thread waiting in `poll` gives up
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)
        self._poll.register(self._wake[0], select.POLLIN)

    def _free(self) -> bool:
        return not (self._writing or self._held or self._owed)

    def _write_now(self, data: bytes) -> int:
        """One non-blocking write (`_state` held, the destination free)."""
        if self._closed:
            raise TransportClosedError("the destination is closed")
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:  # reported by the caller once `_state` is released (`_gone` may wait)
            raise _Broken(exc) from exc

    def try_write(self, data: bytes) -> int:
        """Write what the fd takes now, without waiting (0 while another write owns the destination).
        After a partial write the destination stays reserved for the rest, which the caller must pass to
        `write`/`write_nowait` next."""
        try:
            with self._state:
                if not self._free():
                    return 0
                written = self._write_now(data)
                if 0 < written < len(data):
                    self._held, self._held_rest = True, None
                return written
        except _Broken as broken:
            raise self._gone(broken.error) from broken.error

    def write_nowait(self, data: bytes) -> bytes:
        """`Writer.write_nowait`: a rest reserves the destination (threads wait) until it is written."""
        try:
            with self._state:
                if self._free():
                    written = self._write_now(data)
                    if written == len(data):
                        return b""
                    data = data[written:]
                    self._held, self._held_rest = True, data
                self._owed += 1
        except _Broken as broken:
            raise self._gone(broken.error) from broken.error
        self._waiting += 1
        return data

    async def write_rest(self, data: bytes) -> None:
        """`Writer.write_rest`; a rest cancelled before its turn gives up its reservation."""
        entered = False
        try:
            async with self._lock:
                entered = True
                await self._send_rest(data)
        finally:
            self._waiting -= 1
            if not entered:
                with self._state:
                    self._owed -= 1
                    if self._held_rest is data:
                        self._held, self._held_rest = False, None
                    self._state.notify_all()

    def write_blocking(self, data: bytes) -> None:
        """Write all of `data` as one frame, waiting while the destination is full or owed to the loop (in
        a thread, never on the loop)."""
        # The common frame, inline: the destination free and taking all of it at once. (`acquire` and
        # `release` rather than `with`: no bound methods made per frame.)
        written = -1
        mutex = self._mutex
        mutex.acquire()
        try:
            if not (self._writing or self._held or self._owed or self._closed):
                try:
                    written = os.write(self._fd, data)
                except OSError:
                    written = -1  # full or broken: the general path below tells them apart
                if written == len(data):
                    return
                if written > 0:
                    self._writing = True
        finally:
            mutex.release()
        if written > 0:
            self._finish(memoryview(data)[written:], owed=False)
        else:
            self._write_waiting(data)

    def _write_waiting(self, data: bytes) -> None:
        """`write_blocking` for a frame that could not go at once."""
        try:
            with self._state:
                while not self._free() and not self._closed:
                    self._state.wait()
                written = self._write_now(data)
                if written == len(data):
                    return
                self._writing = True
        except _Broken as broken:
            raise self._gone(broken.error) from broken.error
        self._finish(memoryview(data)[written:], owed=False)

    def _write_owed(self, data: bytes) -> None:
        """A loop write's rest, in a worker thread: after a thread's frame being written, before others."""
        with self._state:
            while self._writing and not self._closed:
                self._state.wait()
            self._writing = True
        self._finish(memoryview(data), owed=True)

    def _finish(self, view: memoryview, *, owed: bool) -> None:
        """Write `view` whole, waiting for the destination (`_writing` set by the caller)."""
        try:
            while view:
                if self._closed:
                    raise TransportClosedError("the destination is closed")
                try:
                    view = view[os.write(self._fd, view) :]
                except BlockingIOError:
                    self._poll.poll()
                except OSError as exc:
                    raise self._gone(exc) from exc
        finally:
            with self._state:
                self._writing = False
                if owed:
                    self._owed -= 1
                    self._held, self._held_rest = False, None
                self._state.notify_all()

    async def _send_rest(self, data: bytes) -> None:
        """The rest of a loop write: a worker thread waits for the destination, not the loop."""
        await anyio.to_thread.run_sync(self._write_owed, data, abandon_on_cancel=True)

    def _gone(self, exc: OSError) -> TransportClosedError:
        if not self._broken and self._on_broken is not None:
            self._broken = True
            with suppress(RuntimeError):  # the loop has ended: nobody to tell
                _on_loop(self._token, self._on_broken)
        return TransportClosedError(f"write failed: {exc}")

    async def aclose(self) -> None:
        """No more writes: a thread waiting for the destination stops; then the fd may be closed."""
        if self._closed:
            return
        with self._state:
            self._closed = True
            self._state.notify_all()
        os.write(self._wake[1], b"x")
        # The writing thread is writing a non-blocking fd or waiting in `poll`, which the wake-up ends.
        await anyio.to_thread.run_sync(self._wait_idle)
        for fd in self._wake:
            os.close(fd)

    def _wait_idle(self) -> None:
        with self._state:
            while self._writing:
                self._state.wait()


class _Broken(Exception):
    """A write found the peer gone (`error`), raised where `ThreadWriter._state` is held."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error


def _on_loop(token: anyio.lowlevel.EventLoopToken, func: Callable[[], object]) -> None:
    """Call `func` on the event loop: now if this is the loop's thread, else handed over (and waited for)."""
    try:
        anyio.lowlevel.current_token()
    except RuntimeError:  # a thread: hand it over
        anyio.from_thread.run_sync(func, token=token)
    else:
        func()


class GuardedIds:
    """The python core's `IdMap` behind a lock, for the thread pump: its methods are several Python steps
    each (the native ones are one call under the GIL), and the pump threads' relays use it too."""

    def __init__(self, ids: core.IdMap, guard: threading.RLock) -> None:
        self._ids = ids
        self._guard = guard

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._ids, name)

        def guarded(*args: Any) -> Any:
            with self._guard:
                return method(*args)

        return guarded


class ThreadPump:
    """Reads `fd` (a pipe or socket, switched to blocking mode) in a thread of its own until EOF, handing
    each chunk to `step` in that thread (`Step`).

    With `wakeable` the thread waits in `poll` with a wake-up pipe before each read, so it ends when `run`
    ends rather than at the next chunk: for an fd that outlives the pump (the process's stdin, which a
    second `serve_stdio` reads again), whose next chunk a leftover thread would otherwise swallow."""

    def __init__(
        self, fd: int, step: Step, *, name: str, chunk: int = RECEIVE_CHUNK, wakeable: bool = False
    ) -> None:
        self._fd = fd
        self._step = step
        self._name = name
        self._chunk = chunk
        self._stop = False
        self._error: BaseException | None = None
        self._ended = threading.Event()
        self._wake: tuple[int, int] | None = os.pipe() if wakeable else None
        self._wake_lock = threading.Lock()  # the wake-up pipe is closed by the thread, written by `run`

    @property
    def ended(self) -> bool:
        """Whether the thread has ended (after which its fd may be closed)."""
        return self._ended.is_set()

    async def run(self) -> None:
        """Pump until EOF or a read error; returns once the thread ended. Cancelled, it returns at once and
        the thread ends at its next chunk or EOF (`wait_ended`), or at once if `wakeable`."""
        token = anyio.lowlevel.current_token()
        done = anyio.Event()

        def main() -> None:
            try:
                self._pump(token)
            except BaseException as exc:  # raised by `run`, on the loop
                self._error = exc
            finally:
                self._close_wake()
                self._ended.set()
                with suppress(RuntimeError):
                    anyio.from_thread.run_sync(done.set, token=token)

        os.set_blocking(self._fd, True)  # the thread sleeps in `readv` itself: one syscall per chunk
        threading.Thread(target=main, name=self._name, daemon=True).start()
        try:
            await done.wait()
        finally:
            self._stop = True
            with self._wake_lock:
                if self._wake is not None:
                    os.write(self._wake[1], b"x")
        if self._error is not None:
            raise self._error

    async def wait_ended(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the thread to end; whether it did (its fd may then be closed)."""
        return await anyio.to_thread.run_sync(self._ended.wait, timeout)

    def _close_wake(self) -> None:
        with self._wake_lock:
            if self._wake is not None:
                for fd in self._wake:
                    os.close(fd)
                self._wake = None

    def _pump(self, token: anyio.lowlevel.EventLoopToken) -> None:
        view = memoryview(bytearray(self._chunk))
        step = self._step
        ready: select.poll | None = None
        if self._wake is not None:
            ready = select.poll()
            ready.register(self._fd, select.POLLIN)
            ready.register(self._wake[0], select.POLLIN)
        while True:
            if ready is not None:
                ready.poll()
                if self._stop:
                    return  # the chunk waiting is left to whoever reads the fd next
            try:
                size = os.readv(self._fd, (view,))
            except BlockingIOError:  # someone made it non-blocking again: wait for data
                _readable(self._fd)
                continue
            except OSError:
                return  # a read error ends the stream like an EOF
            if not size or self._stop:
                return
            work = step(view[:size].tobytes())
            if work is not None and not _run_on_loop(work, token):
                return


def _readable(fd: int) -> None:
    """Wait until `fd` is readable (`poll`: no limit on the fd's number, unlike `select`)."""
    ready = select.poll()
    ready.register(fd, select.POLLIN)
    ready.poll()


def _run_on_loop(work: Callable[[], Coroutine[Any, Any, None]], token: anyio.lowlevel.EventLoopToken) -> bool:
    """Run `work` on the event loop and wait for it; False if the loop has ended. The work's own errors
    (a `RuntimeError` among them) are raised, not taken for the loop's end."""
    started = False

    async def call() -> None:
        nonlocal started
        started = True
        await work()

    try:
        anyio.from_thread.run(call, token=token)
    except RuntimeError:
        if started:
            raise
        return False
    return True
