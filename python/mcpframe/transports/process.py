"""A child process as a transport: its stdin/stdout carry the frames, its stderr reaches ours.

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

With ``spawn(tail_stderr=True)`` (and no ``stderr``) the child writes its stderr into a pipe that one
thread of ours copies to our fd 2 as it comes (the user still sees everything, as with an inherited
stderr), keeping the last ``_TAIL_BYTES`` of it: ``stderr_tail`` then says why a server that crashed at
start went away.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import sys
import sysconfig
import threading
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
_TAIL_BYTES = 4096  # what a stderr tee keeps of the child's stderr
_TAIL_LINES = 20
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


class _StderrTee:
    """Copies the child's stderr (the read end ``fd``, owned) to our fd 2 on a thread of its own, keeping
    the last ``_TAIL_BYTES``; the thread ends, closing ``fd``, when every writer has closed the pipe."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._copy, name="mcpframe-child-stderr", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        try:
            while chunk := os.read(self._fd, 65536):
                _write_all(2, chunk)
                with self._lock:
                    self._tail += chunk
                    del self._tail[:-_TAIL_BYTES]
        except OSError:
            pass
        finally:
            os.close(self._fd)

    @property
    def ended(self) -> bool:
        """The pipe reached EOF: the tail is complete."""
        return not self._thread.is_alive()

    def tail(self) -> str:
        """The last ``_TAIL_LINES`` lines of what the child wrote so far (at most ``_TAIL_BYTES``)."""
        with self._lock:
            data = bytes(self._tail)
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-_TAIL_LINES:])


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd``; a closed or failing fd drops it (the tail is still kept)."""
    view = memoryview(data)
    with suppress(OSError):
        while view:
            view = view[os.write(fd, view) :]


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

    def __init__(
        self,
        process: Process,
        *,
        grace: float = 2.0,
        pipes: tuple[int, int] | None = None,
        stderr_tee: _StderrTee | None = None,
    ) -> None:
        self.process = process
        self._stderr_tee = stderr_tee
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

    async def stderr_tail(self) -> str | None:
        """The last lines the child wrote on stderr (up to 20 lines, 4 KiB), ``None`` when its stderr was
        not kept (``spawn`` without ``tail_stderr``, or a process opened elsewhere). Once the child has exited
        this waits up to ``grace`` seconds for the pipe's end (a grandchild may still hold it open)."""
        tee = self._stderr_tee
        if tee is None:
            return None
        if self.process.returncode is not None:
            with anyio.move_on_after(self.grace):
                while not tee.ended:
                    await anyio.sleep(_POLL)
        return tee.tail()

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


def _not_on_path(command: str, path: str | None) -> FileNotFoundError:
    """A bare command name that could not be started, said with the likely fix. The common case: the README's
    `Client.stdio("mcpframe", ...)` from a venv's Python that was run without activating the venv. A command
    PATH does have also fails with ENOENT when its `#!` interpreter is gone (a moved or deleted venv)."""
    found = shutil.which(command, path=path)
    if found is not None:
        return FileNotFoundError(
            errno.ENOENT,
            f"No such file or directory: {command!r} is {found!r} on PATH but could not be started: its "
            "#! interpreter (or loader) is missing? (a moved or deleted virtual environment: reinstall it)",
        )
    mine = os.path.join(sysconfig.get_path("scripts"), command)
    if os.path.isfile(mine) and os.access(mine, os.X_OK):
        how = f"this Python's environment has it: pass {mine!r}, or activate that environment"
    else:
        how = "pass its full path, or add its directory to PATH"
    return FileNotFoundError(errno.ENOENT, f"No such file or directory: {command!r} is not on PATH; {how}")


async def open_piped(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: int | IO[Any] | None = None,
    start_new_session: bool = False,
) -> tuple[Process, int, int]:
    """Start ``argv`` with its stdin and stdout on two pipes of ours; return the process and the parent's ends
    ``(read_fd, write_fd)`` (its stdout, widened, and its stdin), which the caller then owns.

    ``env`` is the child's whole environment (None: ours). The child's ends are closed here once it has its
    copies, so its exit ends both pipes; if it cannot be started every fd is closed and a bare command name
    that is not on PATH is said with the likely fix.
    """
    child_stdin, write_fd = os.pipe()  # os.pipe's fds are not inherited; the child gets dups of its ends
    try:
        read_fd, child_stdout = os.pipe()
    except BaseException:
        os.close(child_stdin)
        os.close(write_fd)
        raise
    _widen(read_fd)
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=stderr,
            env=env,
            cwd=cwd,
            start_new_session=start_new_session,
        )
    except BaseException as exc:
        os.close(write_fd)
        os.close(read_fd)
        command = argv[0]
        if isinstance(exc, FileNotFoundError) and exc.filename == command and os.sep not in command:
            raise _not_on_path(command, (env if env is not None else os.environ).get("PATH")) from exc
        raise
    finally:
        os.close(child_stdin)
        os.close(child_stdout)
    return process, read_fd, write_fd


async def spawn(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: int | IO[Any] | None = None,
    grace: float = 2.0,
    tail_stderr: bool = False,
) -> ProcessTransport:
    """Start ``command args...`` in its own process group and return a transport on its stdio.

    ``env`` is added to (not substituted for) the current environment. ``stderr`` goes where given (e.g.
    ``subprocess.DEVNULL``), else it is inherited; with ``tail_stderr`` (and no ``stderr``) it is copied
    to ours by a thread that keeps its tail (``ProcessTransport.stderr_tail``).
    """
    full_env = {**os.environ, **env} if env is not None else None
    err_read = child_stderr = -1
    if stderr is None and tail_stderr:
        err_read, child_stderr = os.pipe()
    try:
        process, read_fd, write_fd = await open_piped(
            [command, *args],
            env=full_env,
            cwd=cwd,
            stderr=child_stderr if child_stderr >= 0 else stderr,
            start_new_session=True,
        )
    except BaseException:
        if err_read >= 0:
            os.close(err_read)
        raise
    finally:
        if child_stderr >= 0:
            os.close(child_stderr)
    tee = _StderrTee(err_read) if err_read >= 0 else None
    return ProcessTransport(process, grace=grace, pipes=(read_fd, write_fd), stderr_tee=tee)
