"""The reference TypeScript server, @modelcontextprotocol/server-everything (stdio), behind `mcpframe proxy
--listen`, with mcpframe's client: tools/list and calls (one with progress, one with sampling).

Needs the npm package in .cache (`bash scripts/install-test-peers.sh`); skipped without it locally, a
failure in CI.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.proxy._listen_support import TS_ENTRY, listen_command, running

from mcpframe.http import connect

pytestmark = pytest.mark.anyio

if not TS_ENTRY.exists() or shutil.which("node") is None:
    _why = f"server-everything is not installed at {TS_ENTRY}: run `bash scripts/install-test-peers.sh`"
    if os.environ.get("CI"):
        raise RuntimeError(_why)
    pytest.skip(_why, allow_module_level=True)


@pytest.fixture(scope="module")
def ts_proxy_url() -> Iterator[str]:
    with running(listen_command("node", str(TS_ENTRY), "stdio")) as url:
        yield url


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "sampled-answer"}, "model": "test-model"}


def text_of(result: dict[str, Any]) -> str:
    return "".join(item.get("text", "") for item in result["content"])


async def test_the_ts_everything_server_behind_the_proxy(ts_proxy_url: str) -> None:
    seen: list[float] = []
    with anyio.fail_after(60):
        async with connect(ts_proxy_url, timeout=30, sampling_handler=sample) as client:
            # it does not speak 2026-07-28: the fallback worked through the proxy
            assert client.era == "legacy"
            names = {tool["name"] for tool in await client.list_tools()}
            assert {"echo", "get-sum", "trigger-sampling-request"} <= names
            assert text_of(await client.call_tool("echo", {"message": "hi"})) == "Echo: hi"
            args = {"duration": 0.3, "steps": 3}
            await client.call_tool(
                "trigger-long-running-operation", args, on_progress=lambda p, t, m: seen.append(p)
            )
            sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 10})
            assert "sampled-answer" in text_of(sampled)
    assert len(seen) == 3
    assert seen == sorted(seen)
