"""A stdio server child as the forwarder's upstream: spawned, its stderr passed through, its status kept.

The child gets two pipes of its own (stdin, stdout) driven by `FdTransport` (non-blocking, polled by the
event loop, reading paused while the forwarder is busy writing elsewhere, so the child's writes block: the
back-pressure) and inherits the proxy's stderr, so its log lines reach the user as they would without
the proxy. It runs in a new session (its own process group): a Ctrl-C on the terminal reaches the proxy
alone, which ends the child's whole group itself. `close_input` gives the child EOF while its output is
still read, which is how a stdio server is asked to end.

With `threaded=True` the child's pipes are driven by the thread pump instead (`mcpframe.proxy.pump`): its
stdout is read by a thread of its own (`pump_thread`), its stdin written through a `ThreadWriter`
(`writer`), and `aclose` closes the stdout pipe only once that thread has ended (the child's EOF).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress

import anyio
from anyio.abc import Process

from mcpframe.transports.base import TransportClosedError
from mcpframe.transports.fd import FdTransport

from .pump import Step, ThreadPump, ThreadWriter

__all__ = ["ChildUpstream", "exit_status"]


def exit_status(returncode: int) -> int:
    """A shell's exit status for a child's return code: 128 + n when signal n ended it."""
    return returncode if returncode >= 0 else 128 - returncode


class ChildUpstream:
    """A running stdio server child (`UpstreamLink` of `mcpframe.proxy.forward`)."""

    def __init__(
        self, process: Process, read_fd: int, write_fd: int, grace: float, *, threaded: bool = False
    ) -> None:
        self.process = process
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._fds = FdTransport(read_fd, write_fd)
        self._grace = grace
        self._closed = False
        self.writer: ThreadWriter | None = ThreadWriter(write_fd) if threaded else None
        """The child's stdin for the thread pump (`None`: the event loop writes it through `send`)."""
        self._pump: ThreadPump | None = None

    @classmethod
    async def start(
        cls,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        grace: float = 2.0,
        threaded: bool = False,
    ) -> ChildUpstream:
        """Spawn `command` (argv form) with `env` added to the proxy's environment; `OSError` if it cannot.
        `threaded`: drive its pipes with the thread pump (module doc)."""
        if not command:
            raise ValueError("no upstream command")
        child_stdin, write_fd = os.pipe()
        read_fd, child_stdout = os.pipe()
        try:
            process = await anyio.open_process(
                list(command),
                stdin=child_stdin,
                stdout=child_stdout,
                stderr=None,
                env={**os.environ, **env} if env else None,
                start_new_session=True,
            )
        except BaseException:
            os.close(write_fd)
            os.close(read_fd)
            raise
        finally:
            os.close(child_stdin)
            os.close(child_stdout)
        return cls(process, read_fd, write_fd, grace, threaded=threaded)

    @property
    def pid(self) -> int:
        """The child's process id (and process group id)."""
        return self.process.pid

    async def send(self, data: bytes) -> None:
        """Write whole frames to the child's stdin; `TransportClosedError` once it is closed."""
        if self._write_fd < 0:
            raise TransportClosedError("the upstream server's stdin is closed")
        if self.writer is not None:
            await self.writer.write(data)
            return
        try:
            await self._fds.send(data)
        except OSError as exc:
            raise TransportClosedError(f"the upstream server's stdin is closed: {exc}") from exc

    def send_nowait(self, data: bytes) -> int:
        """Write what the child's stdin takes now, without waiting; how many bytes that was."""
        if self._write_fd < 0:
            raise TransportClosedError("the upstream server's stdin is closed")
        if self.writer is not None:
            return self.writer.try_write(data)
        return self._fds.send_nowait(data)

    @property
    def pump_thread(self) -> Callable[[Step], Awaitable[None]] | None:
        """With `threaded`: read the child's stdout in a thread until its end, each chunk to a `Step`."""
        return self._run_pump if self.writer is not None else None

    async def _run_pump(self, step: Step) -> None:
        if self._closed:
            return
        self._pump = ThreadPump(self._read_fd, step, name=f"mcpframe-proxy-upstream-{self.pid}")
        await self._pump.run()

    async def receive(self) -> bytes:
        """The next chunk of the child's stdout; `b""` at its end."""
        if self._closed:
            return b""
        try:
            return await self._fds.receive()
        except OSError:
            return b""

    async def pump(self, callback: Callable[[bytes], object]) -> None:
        """Call `callback` with each chunk of the child's stdout, in the read callback, until its end."""
        if not self._closed:
            await self._fds.pump(callback)

    def pause_reading(self) -> None:
        """Stop reading the child's stdout (its writes then block) until `resume_reading`."""
        self._fds.pause_reading()

    def resume_reading(self) -> None:
        """Read the child's stdout again."""
        self._fds.resume_reading()

    async def close_input(self) -> None:
        """Close the child's stdin (EOF: a stdio server ends); reading its stdout goes on."""
        if self._write_fd >= 0:
            fd, self._write_fd = self._write_fd, -1
            if self.writer is not None:  # no thread writes to it any more before it is closed
                await self.writer.aclose()
            self._fds.release_write()
            os.close(fd)

    async def wait(self) -> int:
        """Wait for the child to end; its exit status (`exit_status`)."""
        return exit_status(await self.process.wait())

    async def aclose(self) -> None:
        """End the child: EOF, `grace` seconds, then SIGTERM and SIGKILL to its whole process group."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await self.close_input()
            with anyio.move_on_after(self._grace):
                await self.process.wait()
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, sig)
                    with anyio.move_on_after(self._grace):
                        await self.process.wait()
                if self.process.returncode is not None:
                    break
            await self.process.wait()
            pump = self._pump
            if pump is not None and not await pump.wait_ended(self._grace):
                # A process outside the group still holds the pipe open and the thread still reads it:
                # the fd stays open (closing it under a blocked read could hand the number to another file).
                await self._fds.aclose()
                return
            anyio.notify_closing(self._read_fd)
            await self._fds.aclose()
            os.close(self._read_fd)
