"""Scale-out test support: a real `redis-server` on a free loopback port, `mcpframe serve --http --store`
children, and an httpx transport that sends each request to the next instance (a round-robin balancer)."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

import mcpframe

SOURCE = str(Path(mcpframe.__file__).resolve().parents[1])
APP = str(Path(__file__).with_name("app.py"))
_START = 60.0  # seconds a child has to come up (a loaded CI machine imports slowly)


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def redis_server_or_fail() -> str:
    """The `redis-server` program: missing, the test fails under `CI=true` and is skipped elsewhere."""
    found = shutil.which("redis-server")
    if found is None:
        why = "redis-server is not installed (scripts/install-redis.sh, or apt-get install redis-server)"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return found


class RedisProcess:
    """A throwaway `redis-server` (no persistence) that can be stopped and started again on its port."""

    def __init__(self, program: str, log: Path) -> None:
        self.program = program
        self.port = free_port()
        self.log = log
        self.child: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """`redis://127.0.0.1:<port>/0`."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it and wait until it answers PING."""
        args = [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--daemonize", "no"]
        with self.log.open("ab") as log:
            self.child = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + _START
        while not self.ping():
            if self.child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.02)  # polling a child's readiness, not synchronising the code under test

    def ping(self) -> bool:
        """Whether it answers `PING` now."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Kill it (as a crash would)."""
        if self.child is not None:
            self.child.kill()
            self.child.wait()
            self.child = None


class Instance:
    """One `mcpframe serve tests/scale/app.py --http --port 0 FLAGS` child; its stderr goes to a file."""

    def __init__(self, flags: Sequence[str], log: Path, *, wait: bool = True) -> None:
        self.log = log
        command = [sys.executable, "-m", "mcpframe", "serve", APP, "--http", "--port", "0", *flags]
        env = {k: v for k, v in os.environ.items() if k not in ("MCPFRAME_AUTH_TOKEN", "MCPFRAME_DEBUG")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))
        with log.open("wb") as out:
            self.child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=out, env=env)
        self.url = self._wait_for_url() if wait else ""

    def ready(self) -> Instance:
        """Wait until it listens (for one started with `wait=False`, so several start at once)."""
        if not self.url:
            self.url = self._wait_for_url()
        return self

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + _START
        while True:
            for line in self.log.read_text(errors="replace").splitlines():
                if "Streamable HTTP on " in line:
                    return line.rsplit(" ", 1)[-1]
            if self.child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mcpframe serve did not start: {self.log.read_text()[-3000:]}")
            time.sleep(0.05)  # polling a child's readiness, not synchronising the code under test

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])

    def kill(self) -> None:
        """Kill it at once (a crashed instance)."""
        self.child.kill()
        self.child.wait()

    def stop(self) -> None:
        """SIGTERM, then kill if it lingers."""
        if self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


class RoundRobin(httpx.AsyncBaseTransport):
    """A balancer in the client: each request goes to the next live port (no stickiness at all).

    `ports` may be changed between requests (an instance killed leaves the rotation). `sent` records the
    port each request went to, so a test can check that consecutive requests changed instance.
    """

    def __init__(self, ports: Sequence[int]) -> None:
        self.ports = list(ports)
        self._turn = itertools.count()
        self._inner = httpx.AsyncHTTPTransport()
        self.sent: list[tuple[str, int]] = []

    def next_port(self) -> int:
        """The port of the next request."""
        return self.ports[next(self._turn) % len(self.ports)]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        port = self.next_port()
        request.url = request.url.copy_with(port=port)
        self.sent.append((request.method, port))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


LEGACY = "2025-11-25"
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": LEGACY,
}


def rpc(rid: int | None, method: str, params: dict[str, object] | None = None) -> dict[str, object]:
    """A JSON-RPC request (or a notification when `rid` is None)."""
    message: dict[str, object] = {"jsonrpc": "2.0", "method": method}
    if rid is not None:
        message["id"] = rid
    if params is not None:
        message["params"] = params
    return message


INITIALIZE = rpc(
    0,
    "initialize",
    {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "scale", "version": "0"}},
)


class Events:
    """The SSE events of a streamed response, read one at a time: `(id, data)`; data `""` for priming."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def next(self) -> tuple[str | None, str] | None:
        """The next event, `None` at the end of the stream."""
        event_id: str | None = None
        data: list[str] = []
        seen = False
        async for line in self._lines:
            if not line:
                if seen:
                    return event_id, "\n".join(data)
                continue
            if line.startswith(":"):
                continue
            seen = True
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "id":
                event_id = value
            elif field == "data":
                data.append(value)
        return None
