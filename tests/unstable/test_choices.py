"""Each ``mcpframe._unstable`` module takes its private path exactly on the versions it was verified on,
and ``MCPFRAME_PUBLIC_ONLY=1`` forces every public fallback, which still works.

Each case runs in a child interpreter: the switch and the versions are read once, at import. The native
core's own paths under the switch are ``tests/core/test_ffi_paths.py``'s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from mcpframe._unstable import ENV_VAR, PUBLIC_ONLY, anyio_tasks, asyncio_tasks, choices, mcp_sdk, version_of

pytest.importorskip("mcp")

PROGRAM = r"""
import json, anyio
from mcp.server.mcpserver import MCPServer
from mcpframe._unstable import asyncio_tasks, anyio_tasks, choices, mcp_sdk
from mcpframe.client import Client
from mcpframe.compat.engine import engine_server

app = MCPServer("choices")

@app.tool()
def add(a: int, b: int) -> int:
    return a + b

async def call() -> object:
    with anyio.fail_after(20):
        async with Client(engine_server(app)) as client:
            return (await client.call_tool("add", {"a": 2, "b": 3}))["structuredContent"]

out = {name: [choice.path, choice.reason] for name, choice in choices().items()}
out["fastmcp"] = [mcp_sdk.FASTMCP_CHOICE.path, mcp_sdk.FASTMCP_CHOICE.reason]
out["flags"] = {
    "switch_task": asyncio_tasks.enter_task is not None,
    "shield_aware": anyio_tasks.SHIELD_AWARE,
    "thread_token": anyio_tasks.THREAD_TOKEN,
    "short_way": mcp_sdk.SHORT_WAY,
    "otel_filter": mcp_sdk.OTEL_MIDDLEWARE is not None,
    "flush": mcp_sdk.WRITER_FLUSH_TIMEOUT,
}
out["call"] = anyio.run(call)
print(json.dumps(out))
"""

MODULES = {"asyncio_tasks", "anyio_tasks", "mcp_sdk"}


def _run(switch: str | None) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if key != ENV_VAR}
    if switch is not None:
        env[ENV_VAR] = switch
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _in(version: tuple[int, ...] | None, low: tuple[int, ...], high: tuple[int, ...]) -> bool:
    return version is not None and low <= version[: len(low)] <= high


@pytest.fixture(scope="module")
def runs() -> dict[str | None, dict[str, Any]]:
    return {switch: _run(switch) for switch in (None, "1")}


def test_the_switch_forces_every_public_fallback_and_they_work(runs: dict[Any, Any]) -> None:
    public = runs["1"]
    assert set(public) - {"fastmcp", "flags", "call"} == MODULES
    for name in (*MODULES, "fastmcp"):
        path, reason = public[name]
        assert path == "public", name
        assert ENV_VAR in reason, name
    assert public["flags"] == {
        "switch_task": False,
        "shield_aware": False,
        "thread_token": False,
        "short_way": False,
        "otel_filter": False,
        "flush": 0.5,
    }
    # the engine on its public fallbacks (the low-level server through the public session manager,
    # the SDK's full kernel for tools/call) answers as on the private path
    assert public["call"] == runs[None]["call"] == {"result": 5}


def test_without_the_switch_private_exactly_on_the_verified_versions(runs: dict[Any, Any]) -> None:
    expected = {
        "asyncio_tasks": _in(sys.version_info[:2], *asyncio_tasks.VERIFIED),
        "anyio_tasks": _in(version_of("anyio"), *anyio_tasks.VERIFIED),
        "mcp_sdk": version_of("mcp") == mcp_sdk.VERIFIED_MCP,
        "fastmcp": version_of("fastmcp") == mcp_sdk.VERIFIED_FASTMCP,
    }
    if not PUBLIC_ONLY:  # this process is unswitched too: its own choices are the child's
        assert {name: choice.private for name, choice in choices().items()} == {
            name: expected[name] for name in MODULES
        }
    unswitched = runs[None]
    assert {name: unswitched[name][0] == "private" for name in expected} == expected
    flags = unswitched["flags"]
    assert flags["switch_task"] == expected["asyncio_tasks"]
    assert flags["shield_aware"] == flags["thread_token"] == expected["anyio_tasks"]
    assert flags["short_way"] == flags["otel_filter"] == expected["mcp_sdk"]
