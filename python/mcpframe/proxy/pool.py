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
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence

import anyio
import anyio.abc

from mcpframe import core
from mcpframe._unstable import anyio_tasks

from .listen_output import ChildOutput, PipeReader

__all__ = ["Child", "ChildPool", "PoolBusy"]

logger = logging.getLogger("mcpframe.proxy")

_CLOSE_GRACE = 2.0  # seconds a child gets to exit after its stdin closed, before it is terminated


class PoolBusy(Exception):
    """No child could be started: `size` are running and the wait was too long or too crowded."""


class Child:
    """One upstream server process: frames to its stdin, decoded frames from its stdout."""

    def __init__(self, process: anyio.abc.Process, pool: ChildPool, output: ChildOutput) -> None:
        self.process = process
        self.output = output  # its stdout, read where the pipe read lands (`listen_output`)
        self._pool = pool
        self._lock = anyio.Lock()  # concurrent writers (POSTs) must not interleave their frames
        self._writers = 0  # `write` calls under way or waiting for the lock
        self._closed = False
        # the asyncio pipe transport under anyio's wrapper (asyncio backend only) and its fd, for `write_now`
        transport = anyio_tasks.pipe_transport(process.stdin)  # private: `None` where it is not taken
        self._transport: asyncio.WriteTransport | None = None
        self._fd = -1
        if transport is not None:
            pipe = transport.get_extra_info("pipe")
            if pipe is not None:
                self._transport, self._fd = transport, pipe.fileno()

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once it ended."""
        return self.process.returncode

    async def write(self, data: bytes) -> None:
        """Write whole frames (NDJSON); waits while the child reads slowly (flow control)."""
        stdin = self.process.stdin
        assert stdin is not None
        self._writers += 1
        try:
            async with self._lock:
                await stdin.send(data)
        finally:
            self._writers -= 1

    def write_now(self, data: bytes) -> bool:
        """Write whole frames at once, without a trip through the event loop, when nothing waits to be
        written before them: no `write` is under way and the pipe took everything written so far. `False`
        (nothing written): use `write`, which waits for the child to read (flow control), instead.

        Writing only onto an empty pipe buffer keeps the bound of `write`: at most one body (within the
        host's body limit) sits in the buffer beyond what the child read.

        The bytes go to the pipe's fd with one `os.write` (the transport's buffer is empty, so nothing is
        overtaken); only what the pipe did not take (or a failed write, which the transport then meets and
        reports as its own) is handed to the transport, which writes it once the pipe has room."""
        transport = self._transport
        if transport is None or self._writers or self._closed:
            return False
        if transport.is_closing() or transport.get_write_buffer_size():
            return False
        try:
            written = os.write(self._fd, data)
        except OSError:  # full (BlockingIOError), or the child is gone: the transport's own write decides
            written = 0
        if written < len(data):
            transport.write(data[written:])
        return True

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
                if process.stdin is not None:
                    await process.stdin.aclose()
                for stop in (None, process.terminate, process.kill):
                    if stop is not None:
                        stop()  # still running after the grace: asked harder
                    with anyio.move_on_after(_CLOSE_GRACE):
                        await process.wait()
                        break
            except ProcessLookupError:
                pass  # it ended between the checks
            finally:
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
            process, output = await self._start()
        except BaseException:
            self._slots.release()
            raise
        self.spawned += 1
        logger.debug("upstream child %d started: %s", process.pid, self.command)
        return Child(process, self, output)

    async def _start(self) -> tuple[anyio.abc.Process, ChildOutput]:
        """The process, its stdout a pipe of ours read by a `ChildOutput` (not anyio's stream: see there)."""
        read_fd, write_fd = os.pipe()
        try:
            process = await anyio.open_process(
                self.command, stdin=subprocess.PIPE, stdout=write_fd, stderr=None, env=self.env
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)  # the child has its copy: its exit ends the pipe
        pipe = os.fdopen(read_fd, "rb", buffering=0)
        try:
            output = ChildOutput()
            loop = asyncio.get_running_loop()
            try:
                PipeReader(loop, pipe, output)
            except NotImplementedError:  # no `add_reader` (Windows' Proactor loop): asyncio's pipe transport
                await loop.connect_read_pipe(lambda: output, pipe)
        except BaseException:
            pipe.close()
            process.kill()
            with anyio.CancelScope(shield=True):  # reaped even when cancelled: no zombie left behind
                await process.aclose()  # its stdin closed, and waited for (killed: at once)
            raise
        return process, output
