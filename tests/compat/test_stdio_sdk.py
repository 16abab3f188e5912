"""The SDK's own ClientSession and MCPServer, over the drop-in transports, in real subprocesses.

Every scenario runs over the SDK's own transport too, and the two must give the same results.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, ClientSession
from mcp.client.stdio import stdio_client as sdk_stdio_client
from mcp_types import LoggingMessageNotificationParams

import mcpframe.compat
from mcpframe.compat import mcp_sdk

from ._support import MiB, exercise, server_params, text_of

pytestmark = pytest.mark.anyio

CLIENTS = {"sdk": sdk_stdio_client, "dropin": mcp_sdk.stdio_client}


async def run_exercise(server_mode: str, client_mode: str) -> tuple[dict[str, Any], list[Any]]:
    logs: list[Any] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    with anyio.fail_after(60):
        async with (
            CLIENTS[client_mode](server_params(server_mode)) as (read, write),
            ClientSession(read, write, logging_callback=on_log) as session,
        ):
            results = await exercise(session)
    return results, logs


async def test_every_method_matches_the_sdk_transport() -> None:
    reference, reference_logs = await run_exercise("sdk", "sdk")
    for server_mode, client_mode in (("dropin", "sdk"), ("sdk", "dropin"), ("dropin", "dropin")):
        results, logs = await run_exercise(server_mode, client_mode)
        assert results == reference, (server_mode, client_mode)
        assert logs == reference_logs == ["log: note"]
    assert reference["echo"]["content"][0]["text"] == "h\u00e9llo \U0001f389\n"
    assert reference["shout"]["content"][0]["text"] == "QUIET"  # the stray prints stayed off the wire
    assert reference["missing_tool"]["is_error"] is True
    assert reference["static"]["contents"][0]["text"] == "static content"
    assert reference["item"]["contents"][0]["text"] == "item apple"
    assert reference["complete_prompt"]["completion"]["values"] == ["alpha", "alpine"]
    assert [t["name"] for t in reference["tools"]["tools"]] == ["echo", "blob", "shout", "chatty"]


@pytest.mark.parametrize("mib", [1, 8, 32])
async def test_large_results_through_the_dropin_client(mib: int) -> None:
    size = mib * MiB
    with anyio.fail_after(60):
        async with (
            mcp_sdk.stdio_client(server_params("sdk")) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("blob", {"size": size})
            text = text_of(result)
            assert len(text) == size
            assert text == "x" * size
            assert text_of(await session.call_tool("echo", {"text": "after"})) == "after"


async def test_large_result_from_the_dropin_server() -> None:
    size = 8 * MiB
    with anyio.fail_after(60):
        async with (
            mcp_sdk.stdio_client(server_params("dropin")) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert len(text_of(await session.call_tool("blob", {"size": size}))) == size


async def test_installed_dropins_serve_the_sdk_high_level_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """After install(), ``mcp.Client(StdioServerParameters(...))`` runs on the drop-in client."""
    spawned: list[str] = []
    original = mcp_sdk._ClientPipes

    def spy(process: Any, max_frame: int) -> Any:
        spawned.append(f"pid {process.pid}")
        return original(process, max_frame)

    monkeypatch.setattr(mcp_sdk, "_ClientPipes", spy)
    mcpframe.compat.install()
    try:
        with anyio.fail_after(60):
            async with Client(server_params("dropin")) as client:
                result = await client.call_tool("echo", {"text": "via Client"})
    finally:
        mcpframe.compat.uninstall()
    assert text_of(result) == "via Client"
    assert len(spawned) == 1
