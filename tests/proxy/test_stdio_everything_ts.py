"""mcpframe's Client through `mcpframe proxy --` in front of the reference TypeScript server,
@modelcontextprotocol/server-everything (installed in .cache by scripts/install-test-peers.sh; skipped
locally without it, a failure in CI)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests._blocked import all_blocked

from mcpframe.client import Client

from .conftest import PROXY, child_env

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / ".cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

if not ENTRY.exists() or shutil.which("node") is None:
    _why = f"server-everything is not installed at {ENTRY}: run `bash scripts/install-test-peers.sh`"
    if os.environ.get("CI"):
        raise RuntimeError(_why)
    pytest.skip(_why, allow_module_level=True)


def text_of(result: dict[str, Any]) -> str:
    return "".join(item.get("text", "") for item in result["content"])


async def test_typescript_everything_through_the_proxy() -> None:
    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "sampled-answer"}, "model": "m"}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    command = [*PROXY, "--", "node", str(ENTRY), "stdio"]
    client = Client.stdio(
        sys.executable, command[1:], env=child_env(), timeout=30, sampling_handler=sample,
        elicitation_handler=elicit, roots=[{"uri": "file:///tmp/project", "name": "project"}],
    )  # fmt: skip
    with anyio.fail_after(90):
        async with client:
            assert client.era == "legacy"
            assert text_of(await client.call_tool("echo", {"message": "hi"})) == "Echo: hi"
            seen: list[float] = []
            args = {"duration": 0.3, "steps": 3}
            await client.call_tool(
                "trigger-long-running-operation", args, on_progress=lambda p, t, m: seen.append(p)
            )
            with anyio.fail_after(5):
                while len(seen) < 3:
                    await all_blocked()
            sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 10})
            assert "sampled-answer" in text_of(sampled)
            declined = await client.call_tool("trigger-elicitation-request", {})
            assert "decline" in text_of(declined).lower()
            assert "file:///tmp/project" in text_of(await client.call_tool("get-roots-list", {}))
            resources = await client.list_resources()
            await client.subscribe(resources[0]["uri"])
            await client.unsubscribe(resources[0]["uri"])
            await client.ping()
            assert client.session.pending == 0
