"""A child process as a transport: its stdin/stdout carry the frames, its stderr is inherited.

The child is started in a new session (its own process group). Closing the transport closes the child's
stdin (a well-behaved MCP server exits on EOF), waits ``grace`` seconds, then sends SIGTERM to the whole
group, and SIGKILL after another ``grace``: the whole process tree ends, grandchildren included.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import IO, Any

import anyio
from anyio.abc import Process

from mcpframe.transports.base import RECEIVE_CHUNK, TransportClosedError

__all__ = ["ProcessTransport", "spawn"]

_POLL = 0.02


class ProcessTransport:
    """A transport over a child process's stdin/stdout; ``aclose`` ends its process group."""

    def __init__(self, process: Process, *, grace: float = 2.0) -> None:
        self.process = process
        self.grace = grace
        self._closed = False
        self._stdin = process.stdin
        self._stdout = process.stdout
        if self._stdin is None or self._stdout is None:
            raise ValueError("the process needs piped stdin and stdout")

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
        assert self._stdout is not None
        if self._closed:
            return b""
        try:
            return await self._stdout.receive(RECEIVE_CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return b""

    async def send(self, data: bytes) -> None:
        """Write ``data`` to the child's stdin."""
        assert self._stdin is not None
        if self._closed:
            raise TransportClosedError("transport is closed")
        try:
            await self._stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            raise TransportClosedError(f"the child process's stdin is closed: {exc}") from exc

    async def aclose(self) -> None:
        """Close stdin, give the child ``grace`` seconds, then end its whole process group."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            assert self._stdin is not None
            assert self._stdout is not None
            with anyio.move_on_after(self.grace):
                with suppress(OSError, anyio.BrokenResourceError):
                    await self._stdin.aclose()
                await self.process.wait()
            await self._end_group()
            await self._stdout.aclose()

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
    process = await anyio.open_process(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=full_env,
        cwd=cwd,
        start_new_session=True,
    )
    return ProcessTransport(process, grace=grace)
