"""Through `--listen`, in process: a server's list_changed reaches the client, a client's cancel reaches the
server's handler (the tool sees its cancellation) while the session goes on, and a client that does not read
holds the bridge back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as sdk
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests._blocked import all_blocked
from tests.proxy._listen_support import in_process_proxy

from mcpframe.http import connect
from mcpframe.http.streams import Stream
from mcpframe.proxy.listen_bridge import HIGH_WATER, emit_bounded

pytestmark = pytest.mark.anyio

SERVER = '''
import sys
from pathlib import Path

import anyio
from mcpframe.server import Server

server = Server("changing", version="1.0.0")
MARK = Path(sys.argv[1])


@server.tool
def announce() -> str:
    """Tell the clients the tool list changed."""
    server.notify_list_changed("tools")
    return "announced"


@server.tool
async def wait() -> str:
    """Sleep until cancelled; say so in the mark file."""
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        MARK.write_text("cancelled")
        raise
    return "late"


server.run()
'''


@pytest.fixture
def server_command(tmp_path: Path) -> list[str]:
    script = tmp_path / "changing.py"
    script.write_text(SERVER)
    return [sys.executable, str(script), str(tmp_path / "mark")]


async def test_list_changed_reaches_the_sdk_client(server_command: list[str]) -> None:
    seen: list[Any] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        seen.append(message)
        if isinstance(message, sdk.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(30):
        async with (
            in_process_proxy(server_command) as proxy,
            streamable_http_client(proxy.url) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            await session.initialize()
            result = await session.call_tool("announce", {})
            assert result.content[0].text == "announced"  # type: ignore[union-attr]
            await changed.wait()


async def test_a_cancel_reaches_the_servers_handler_and_the_session_goes_on(
    server_command: list[str], tmp_path: Path
) -> None:
    mark = tmp_path / "mark"
    with anyio.fail_after(30):
        async with in_process_proxy(server_command) as proxy, connect(proxy.url, mode="legacy") as client:
            with anyio.move_on_after(0.5):
                await client.call_tool("wait", {})  # cancelled: the client sends notifications/cancelled
            (session,) = proxy.app.sessions.sessions.values()
            while not mark.exists():  # bounded by fail_after: the child's handler saw the cancel
                await anyio.sleep(0.02)
            assert mark.read_text() == "cancelled"
            assert not session.connection.pending  # type: ignore[attr-defined]
            assert (await client.call_tool("announce", {}))["content"][0]["text"] == "announced"


async def test_a_client_that_does_not_read_stops_the_bridge_at_the_high_water_mark() -> None:
    stream = Stream(None, None)
    reader = await stream.attach(retry_ms=None)
    emitted = 0

    async def produce() -> None:
        nonlocal emitted
        for i in range(HIGH_WATER * 3):
            await emit_bounded(
                stream, b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}' % i, response=False
            )
            emitted += 1

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            await all_blocked()  # the producer ran as far as it may
            assert stream.queued() == HIGH_WATER + 1  # it waits, holding at most one event past the mark
            read = 0
            while read < HIGH_WATER * 3:  # the client reads: the producer goes on, to the end
                chunk = await reader.get()
                assert chunk
                read += 1
    assert emitted == HIGH_WATER * 3
