"""A child process as a transport: its stdin/stdout carry the frames, its stderr is inherited.

The child is started in a new session (its own process group). Closing the transport closes the child's
stdin (a well-behaved MCP server exits on EOF), waits ``grace`` seconds, then sends SIGTERM to the whole
group, and SIGKILL after another ``grace``: the whole process tree ends, grandchildren included.

``spawn`` connects the child to two pipes of its own and drives the parent's ends with ``FdTransport``
(the server side's reader: one reused read buffer, reads in the event loop's readiness callback, at most a
few chunks ahead of the consumer; writes without a task switch), so the transport also offers ``pump``,
``send_nowait`` and ``pause_reading``/``resume_reading`` to the Session. The child's stdout pipe is widened
to 1 MiB where Linux allows, so a large result crosses in fewer turns of the two processes (only that one:
Linux charges pipe sizes to the user's quota, and once that is exceeded new pipes are small). A
``ProcessTransport`` built on a process opened elsewhere with piped stdin/stdout reads and writes through
that process's streams instead (asyncio's pipe transports: a fresh 256 KiB buffer per read), and has
none of them (those attributes are ``None``).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from typing import IO, Any

import anyio
from anyio.abc import AsyncResource, ByteReceiveStream, ByteSendStream, Process

from mcpframe.transports.base import RECEIVE_CHUNK, TransportClosedError
from mcpframe.transports.fd import FdTransport

if sys.platform != "win32":
    import fcntl

__all__ = ["ProcessTransport", "spawn"]

_POLL = 0.02
_PIPE_SIZE = 1024 * 1024  # asked of Linux for the child's stdout (default 64 KiB; 1 MiB is the usual cap)
_STREAM_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


class _StdinEnd(AsyncResource):
    """The parent's end of the child's stdin pipe; ``aclose`` gives the child EOF while reading goes on."""

    def __init__(self, fds: FdTransport, fd: int) -> None:
        self._fds = fds
        self._fd = fd

    async def aclose(self) -> None:
        if self._fd < 0:
            return
        self._fds.release_write()  # a pending send fails; nothing writes to the fd any more
        os.close(self._fd)
        self._fd = -1


class ProcessTransport:
    """A transport over a child process's stdin/stdout; ``aclose`` ends its process group.

    ``pipes`` (``spawn`` passes it) is ``(read_fd, write_fd)``: the parent's ends of the pipes that are the
    child's stdout and stdin, owned (and closed) by the transport. Without it, ``process`` needs piped
    stdin and stdout, which are used as they are.
    """

    pump: Callable[[Callable[[bytes], object]], Awaitable[None]] | None
    """Hand each chunk of the child's stdout to a callback until EOF (see ``FdTransport.pump``); ``None``
    on a process opened elsewhere."""
    send_nowait: Callable[[bytes], int] | None
    """Write what the child's stdin takes now (see ``FdTransport.send_nowait``); ``None`` as ``pump``."""
    pause_reading: Callable[[], None] | None
    """Stop reading the child's stdout until ``resume_reading`` (flow control, see
    ``FdTransport.pause_reading``): the child's writes then block. ``None`` as ``pump`` (the Session then
    simply stops calling ``receive``)."""
    resume_reading: Callable[[], None] | None
    """Read the child's stdout again after ``pause_reading``; ``None`` as ``pump``."""

    def __init__(self, process: Process, *, grace: float = 2.0, pipes: tuple[int, int] | None = None) -> None:
        self.process = process
        self.grace = grace
        self._closed = False
        self._stdout: ByteReceiveStream | None = None
        self._fds: FdTransport | None = None
        self._read_fd = -1
        self._stdin: AsyncResource
        if pipes is None:
            if process.stdin is None or process.stdout is None:
                raise ValueError("the process needs piped stdin and stdout")
            self._stdin, self._stdout = process.stdin, process.stdout
            self.pump = self.send_nowait = None
            self.pause_reading = self.resume_reading = None
            return
        self._read_fd, write_fd = pipes
        self._fds = fds = FdTransport(self._read_fd, write_fd)
        self._stdin = _StdinEnd(fds, write_fd)
        self.pump, self.send_nowait = fds.pump, fds.send_nowait
        self.pause_reading, self.resume_reading = fds.pause_reading, fds.resume_reading

    @property
    def pid(self) -> int:
        """The child's process id (also its process group id)."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The child's exit status, ``None`` while it runs."""
        return self.process.returncode

    async def receive(self) -> bytes:
        """The next chunk of the child's stdout; ``b""`` once it is closed."""
        if self._closed:
            return b""
        if self._fds is not None:
            return await self._fds.receive()
        assert self._stdout is not None
        try:
            return await self._stdout.receive(RECEIVE_CHUNK)
        except (anyio.EndOfStream, *_STREAM_ERRORS):
            return b""

    async def send(self, data: bytes) -> None:
        """Write ``data`` to the child's stdin."""
        if self._closed:
            raise TransportClosedError("transport is closed")
        try:
            if self._fds is not None:
                await self._fds.send(data)
            else:
                assert isinstance(self._stdin, ByteSendStream)
                await self._stdin.send(data)
        except TransportClosedError as exc:
            raise TransportClosedError(f"the child process's stdin is closed: {exc}") from exc
        except _STREAM_ERRORS as exc:
            raise TransportClosedError(f"the child process's stdin is closed: {exc}") from exc

    async def aclose(self) -> None:
        """Close stdin, give the child ``grace`` seconds, then end its whole process group."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            if self._fds is not None:  # none of this switches tasks: send and receive see it at once
                await self._stdin.aclose()
                anyio.notify_closing(self._read_fd)  # wakes a read polled through anyio (not asyncio)
                await self._fds.aclose()  # a pending receive returns b"", a pending pump returns
            with anyio.move_on_after(self.grace):
                with suppress(OSError, anyio.BrokenResourceError):
                    await self._stdin.aclose()  # (already closed on pipes of our own: a no-op)
                await self.process.wait()
            await self._end_group()
            if self._stdout is not None:
                await self._stdout.aclose()
            else:
                os.close(self._read_fd)

    async def _end_group(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not _signal_group(self.pid, sig):
                break
            with anyio.move_on_after(self.grace):
                if self.process.returncode is None:
                    await self.process.wait()
                while _signal_group(self.pid, 0):
                    await anyio.sleep(_POLL)
        if self.process.returncode is None:
            await self.process.wait()


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; ``False`` when no process is left in it."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # a zombie leader on some systems; treat the group as alive
        return True
    return True


def _widen(fd: int) -> None:
    """Ask for a ``_PIPE_SIZE`` pipe (Linux): a large frame then crosses in fewer turns of both processes."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if sys.platform != "win32" else None
    if set_size is not None:
        with suppress(OSError):  # over the user's pipe quota, or a kernel without it: keep the default
            fcntl.fcntl(fd, set_size, _PIPE_SIZE)


async def spawn(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: int | IO[Any] | None = None,
    grace: float = 2.0,
) -> ProcessTransport:
    """Start ``command args...`` in its own process group and return a transport on its stdio.

    ``env`` is added to (not substituted for) the current environment. ``stderr`` is inherited unless
    given (e.g. ``subprocess.DEVNULL``).
    """
    full_env = {**os.environ, **env} if env is not None else None
    child_stdin, write_fd = os.pipe()  # os.pipe's fds are not inherited; the child gets dups of its ends
    try:
        read_fd, child_stdout = os.pipe()
    except OSError:
        os.close(child_stdin)
        os.close(write_fd)
        raise
    _widen(read_fd)
    try:
        process = await anyio.open_process(
            [command, *args],
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=stderr,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    except BaseException:
        os.close(write_fd)
        os.close(read_fd)
        raise
    finally:
        os.close(child_stdin)
        os.close(child_stdout)
    return ProcessTransport(process, grace=grace, pipes=(read_fd, write_fd))
