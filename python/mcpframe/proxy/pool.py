"""Upstream children of the listening proxy: stdio servers spawned on demand, at most `size` at once.

Each handshake-era HTTP session (and each legacy SSE stream) gets a child of its own: its ids, its
initialize and its subscriptions are the child's, so nothing has to be rewritten. `ChildPool.spawn` waits
while `size` children run (a session that ends frees its child's place); at most `max_waiting` sessions wait,
each at most `wait_timeout` seconds, so a burst of new sessions never queues without bound.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

import anyio
import anyio.abc

from mcpframe import core
from mcpframe.transports.process import open_piped

from .listen_input import ChildInput
from .listen_output import ChildOutput, PipeReader

__all__ = ["Child", "ChildPool", "PoolBusy"]

logger = logging.getLogger("mcpframe.proxy")

_CLOSE_GRACE = 2.0  # seconds a child gets to exit after its stdin closed, before it is terminated


class PoolBusy(Exception):
    """No child could be started: `size` are running and the wait was too long or too crowded."""


class Child:
    """One upstream server process: frames to its stdin, decoded frames from its stdout."""

    def __init__(
        self, process: anyio.abc.Process, pool: ChildPool, output: ChildOutput, writer: ChildInput
    ) -> None:
        self.process = process
        self.input = writer  # its stdin, a pipe of ours written through asyncio's transport (`listen_input`)
        self.output = output  # its stdout, read where the pipe read lands (`listen_output`)
        self._pool = pool
        self._closed = False
        # The writes are the stdin's own methods, bound here (no call in between on the fast path):
        self.write: Callable[[bytes], Awaitable[None]] = writer.write
        """Write whole frames (NDJSON); waits while the child reads slowly (flow control). Raises
        `anyio.BrokenResourceError` once the child's stdin is gone, `anyio.ClosedResourceError` after
        `close` (`ChildInput.write`)."""
        self.write_now: Callable[[bytes], bool] = writer.write_now
        """Write whole frames at once, without a trip through the event loop, when nothing waits to be
        written before them; `False` (nothing written, also once closed): use `write` instead
        (`ChildInput.write_now`)."""

    async def send(self, data: bytes) -> bool:
        """`write`, with `False` in place of the errors of a child that is gone (or closed)."""
        try:
            await self.write(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return False
        return True

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once it ended."""
        return self.process.returncode

    def frames(self, *, max_frame: int) -> AsyncIterator[core.Message | core.FrameError]:
        """What the child writes, frame by frame (envelope decoded lazily), until its stdout ends; without
        the frames `output.take` took."""
        return self.output.frames(max_frame=max_frame)

    async def close(self) -> int | None:
        """End the child: stdin closed (a stdio server's cue to exit), then terminate, then kill. Idempotent;
        its place in the pool is free afterwards. Returns the exit status."""
        if self._closed:
            return self.process.returncode
        self._closed = True
        process = self.process
        with anyio.CancelScope(shield=True):
            try:
                self.input.close()
                for stop in (None, process.terminate, process.kill):
                    if stop is not None:
                        stop()  # still running after the grace: asked harder
                    with anyio.move_on_after(_CLOSE_GRACE):
                        await process.wait()
                        break
            except ProcessLookupError:
                pass  # it ended between the checks
            finally:
                self.input.abort()  # what it never read is dropped with it
                self.output.close()
                self._pool.release()
        return process.returncode


class ChildPool:
    """Spawns `command` (with `env` added to this process's environment), at most `size` at once."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        size: int = 64,
        max_waiting: int = 1024,
        wait_timeout: float = 30.0,
    ) -> None:
        if not command:
            raise ValueError("the upstream command is empty")
        self.command = list(command)
        self.env = {**os.environ, **env} if env else None
        self.size = size
        self.max_waiting = max_waiting
        self.wait_timeout = wait_timeout
        self._slots = anyio.Semaphore(size)
        self.waiting = 0
        self.spawned = 0  # children started so far (tests and benchmarks read it)

    @property
    def running(self) -> int:
        """Children alive now."""
        return self.size - self._slots.value

    def release(self) -> None:
        """A child ended: its place is free."""
        self._slots.release()

    async def spawn(self) -> Child:
        """A new child, once fewer than `size` run; `PoolBusy` if it cannot start soon enough."""
        if self.waiting >= self.max_waiting and self._slots.value == 0:
            raise PoolBusy(f"{self.size} upstream servers are running and {self.waiting} sessions wait")
        self.waiting += 1
        acquired = False
        try:
            with anyio.move_on_after(self.wait_timeout):
                await self._slots.acquire()
                acquired = True
            if not acquired:
                raise PoolBusy(
                    f"all {self.size} upstream servers stayed busy for {self.wait_timeout:g} s "
                    "(mcpframe proxy --pool-size)"
                )
        finally:
            self.waiting -= 1
        try:
            process, output, writer = await self._start()
        except BaseException:
            self._slots.release()
            raise
        self.spawned += 1
        logger.debug("upstream child %d started: %s", process.pid, self.command)
        return Child(process, self, output, writer)

    async def _start(self) -> tuple[anyio.abc.Process, ChildOutput, ChildInput]:
        """The process, its stdin and stdout pipes of ours: the stdout read by a `ChildOutput` (not anyio's
        stream: see there), the stdin written through a `ChildInput` (asyncio's pipe transport, ours)."""
        process, out_read, in_write = await open_piped(self.command, env=self.env)
        stdout = os.fdopen(out_read, "rb", buffering=0)
        stdin = os.fdopen(in_write, "wb", buffering=0)
        writer: ChildInput | None = None
        try:
            loop = asyncio.get_running_loop()
            _, writer = await loop.connect_write_pipe(ChildInput, stdin)
            output = ChildOutput()
            try:
                PipeReader(loop, stdout, output)
            except NotImplementedError:  # no `add_reader` (Windows' Proactor loop): asyncio's pipe transport
                await loop.connect_read_pipe(lambda: output, stdout)
        except BaseException:
            if writer is not None:
                writer.abort()  # its transport closes the pipe
            stdin.close()
            stdout.close()
            process.kill()
            with anyio.CancelScope(shield=True):  # reaped even when cancelled: no zombie left behind
                await process.aclose()  # waited for (killed: at once)
            raise
        return process, output, writer
