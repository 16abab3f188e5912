"""The client against the reference TypeScript server, @modelcontextprotocol/server-everything, over stdio.

Needs the npm package in .cache (not a Python dependency):
    npm install --prefix .cache/server-everything --no-audit --no-fund --ignore-scripts \\
        @modelcontextprotocol/server-everything@2026.8.31
`make test` runs scripts/install-test-peers.sh first; without the peer these tests are skipped locally
(and say so) and fail in CI.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests._blocked import all_blocked

from mcpframe.client import Client

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / ".cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

if not ENTRY.exists() or shutil.which("node") is None:
    _why = f"server-everything is not installed at {ENTRY}: run `bash scripts/install-test-peers.sh`"
    if os.environ.get("CI"):
        # `make test` installs it; in CI a missing peer is a failure, never a silent skip.
        raise RuntimeError(_why)
    pytest.skip(_why, allow_module_level=True)


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    assert params["messages"]
    return {"role": "assistant", "content": {"type": "text", "text": "sampled-answer"}, "model": "test-model"}


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    assert params["requestedSchema"]["type"] == "object"
    return {"action": "decline"}


def text_of(result: dict[str, Any]) -> str:
    return "".join(item.get("text", "") for item in result["content"])


def everything(**options: Any) -> Client:
    return Client.stdio(
        "node",
        [str(ENTRY), "stdio"],
        timeout=30,
        sampling_handler=sample,
        elicitation_handler=elicit,
        roots=[{"uri": "file:///tmp/project", "name": "project"}],
        **options,
    )


async def test_everything_server() -> None:
    with anyio.fail_after(90):
        async with everything() as client:
            assert client.era == "legacy"  # it does not speak server/discover: the fallback worked
            assert client.server_info is not None
            names = {tool["name"] for tool in await client.list_tools()}
            assert {"echo", "get-sum", "trigger-sampling-request", "get-roots-list"} <= names
            assert text_of(await client.call_tool("echo", {"message": "hi"})) == "Echo: hi"
            assert "42" in text_of(await client.call_tool("get-sum", {"a": 40, "b": 2}))
            seen: list[float] = []
            args = {"duration": 0.3, "steps": 3}
            await client.call_tool(
                "trigger-long-running-operation", args, on_progress=lambda p, t, m: seen.append(p)
            )
            with anyio.fail_after(5):
                while len(seen) < 3:
                    await all_blocked()
            assert seen == sorted(seen)
            sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 10})
            assert "sampled-answer" in text_of(sampled)
            declined = await client.call_tool("trigger-elicitation-request", {})
            assert "decline" in text_of(declined).lower()
            assert "file:///tmp/project" in text_of(await client.call_tool("get-roots-list", {}))
            resources = await client.list_resources()
            assert resources
            contents = await client.read_resource(resources[0]["uri"])
            assert contents[0]["uri"] == resources[0]["uri"]
            assert len(await client.list_resource_templates()) >= 1
            prompt = await client.get_prompt("args-prompt", {"city": "Paris"})
            assert "Paris" in str(prompt["messages"])
            ref = {"type": "ref/prompt", "name": "completable-prompt"}
            completion = await client.complete(ref, {"name": "department", "value": "E"})
            assert all(isinstance(value, str) for value in completion["values"])
            await client.subscribe(resources[0]["uri"])
            await client.unsubscribe(resources[0]["uri"])
            await client.set_logging_level("error")
            await client.ping()
            assert client.session.pending == 0
