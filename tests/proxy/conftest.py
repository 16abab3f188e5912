"""Proxy tests: a raw NDJSON client for `mcpframe proxy` children, the scripted peer's command, and the
`proxy` (an in-process `proxy --listen` in front of the peer) and `http` (an HTTP client) fixtures of the
listen tests, which a module overrides by defining its own."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

import mcpframe

if TYPE_CHECKING:  # the HTTP stack is imported by the fixtures that need it, not by every proxy test
    import httpx
    from tests.proxy._listen_support import Proxy

SOURCE = str(Path(mcpframe.__file__).resolve().parents[1])
PEER = [sys.executable, str(Path(__file__).with_name("peer.py"))]
PROXY = [sys.executable, "-m", "mcpframe", "proxy"]


def child_env() -> dict[str, str]:
    """This checkout's mcpframe first on the children's path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    """`proxy --listen` in this process, in front of the scripted peer."""
    from tests.proxy._listen_support import in_process_proxy  # noqa: PLC0415 - the http extra

    async with in_process_proxy(PEER) as proxy:
        yield proxy


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    import httpx  # noqa: PLC0415 - the http extra

    async with httpx.AsyncClient(timeout=20) as client:
        yield client


class RawClient:
    """`mcpframe proxy [flags] -- command` driven line by line, to see the exact bytes it forwards."""

    pump_flags: tuple[str, ...] = ()
    """Flags every `start` adds (tests/proxy/test_stdio.py runs each test with each `--pump`)."""

    def __init__(self, process: Process) -> None:
        self.process = process
        assert process.stdout is not None
        self._lines = BufferedByteReceiveStream(process.stdout)

    @classmethod
    async def start(cls, *flags: str, command: list[str] | None = None) -> RawClient:
        argv = [*PROXY, *cls.pump_flags, *flags, "--", *(command or PEER)]
        return cls(await anyio.open_process(argv, env=child_env(), stderr=None))

    async def send(self, message: Any) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def line(self) -> bytes:
        with anyio.fail_after(20):
            return await self._lines.receive_until(b"\n", 1 << 20)

    async def recv(self) -> Any:
        return json.loads(await self.line())

    async def call(self, id: Any, method: str, params: Any = None) -> Any:
        message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.recv()

    async def handshake(self) -> None:
        answer = await self.call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        assert answer["result"]["serverInfo"]["name"] == "peer"
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def aclose(self) -> int:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()
        with anyio.fail_after(20):
            return await self.process.wait()
