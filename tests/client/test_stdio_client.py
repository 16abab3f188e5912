"""Client.stdio failure modes: errors arrive plainly, nothing is left running."""

from __future__ import annotations

import sys

import anyio
import pytest

from mcpframe.client import Client
from mcpframe.session import ConnectionClosed, RequestTimeout

pytestmark = pytest.mark.anyio


async def test_missing_command_raises_plainly() -> None:
    with anyio.fail_after(10), pytest.raises(FileNotFoundError):
        async with Client.stdio("/nonexistent/mcp-server-binary"):
            pass


async def test_server_that_exits_at_once_raises_connection_closed() -> None:
    with anyio.fail_after(10), pytest.raises(ConnectionClosed):
        async with Client.stdio(sys.executable, ["-c", "pass"]):
            pass


async def test_server_that_writes_garbage_times_out_plainly() -> None:
    script = "import sys; sys.stdin.readline(); print('hello, I am not JSON', flush=True); sys.stdin.read()"
    with anyio.fail_after(10), pytest.raises(RequestTimeout):
        async with Client.stdio(sys.executable, ["-c", script], discover_timeout=0.2, timeout=0.5):
            pass
