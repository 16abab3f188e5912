"""A server in a child process, spoken to line by line: its stdout (frames), its stderr (readiness lines)."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

import mcpframe

# children import this checkout's mcpframe, whether or not it is installed in the interpreter
SOURCE = str(Path(mcpframe.__file__).resolve().parents[1])
BOUND = 60  # seconds any one wait on a child may take before the test fails (never reached when it works)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def child_env(**extra: str) -> dict[str, str]:
    """This mcpframe first on the path, no debug switch from outside, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("MCPFRAME_DEBUG", "MCPFRAME_SHUTDOWN_GRACE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))
    return {**env, **extra}


class Child:
    """A running child: send frames, read answers, wait for a stderr line, signal it, collect its end."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.process = process
        self.stdout = BufferedByteReceiveStream(process.stdout)
        self.stderr_lines: list[str] = []
        self._new_line = anyio.Event()
        self._stderr_done = anyio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def answer(self) -> dict[str, Any]:
        """The next frame on stdout."""
        with anyio.fail_after(BOUND):
            line = await self.stdout.receive_until(b"\n", 1 << 20)
        frame: dict[str, Any] = json.loads(line)
        return frame

    async def initialize(self) -> None:
        await self.send(INITIALIZE)
        assert (await self.answer())["id"] == 1
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, rid: int, tool: str) -> None:
        await self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool}})

    async def read_stderr(self) -> None:
        assert self.process.stderr is not None
        buffered = BufferedByteReceiveStream(self.process.stderr)
        try:
            while True:
                line = await buffered.receive_until(b"\n", 1 << 20)
                self.stderr_lines.append(line.decode(errors="replace"))
                self._new_line.set()
                self._new_line = anyio.Event()
        except (anyio.EndOfStream, anyio.IncompleteRead):
            pass
        finally:
            self._stderr_done.set()
            self._new_line.set()

    async def stderr_line(self, wanted: Callable[[str], bool] | str) -> str:
        """Wait for a stderr line containing `wanted` (or for which it is true)."""
        test = (lambda line: wanted in line) if isinstance(wanted, str) else wanted
        with anyio.fail_after(BOUND):
            while True:
                for line in self.stderr_lines:
                    if test(line):
                        return line
                if self._stderr_done.is_set():
                    raise AssertionError(f"no such line on stderr: {self.stderr_lines}")
                await self._new_line.wait()

    def signal(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    async def end(self) -> tuple[int, bytes, str]:
        """Wait for the child to exit: its status, what was left on stdout, its whole stderr."""
        with anyio.fail_after(BOUND):
            rest = b""
            try:
                while True:
                    rest += await self.stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                pass
            status = await self.process.wait()
            await self._stderr_done.wait()
        return status, rest, "\n".join(self.stderr_lines)


@asynccontextmanager
async def child(command: list[str], cwd: Path, **env: str) -> AsyncIterator[Child]:
    """Run `command` in `cwd`; it is killed if the test leaves before it ended."""
    process = await anyio.open_process(command, cwd=cwd, env=child_env(**env))
    running = Child(process)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(running.read_stderr)
            yield running
            tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()


PYTHON = sys.executable
