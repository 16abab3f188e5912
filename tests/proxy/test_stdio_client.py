"""mcpframe's own `Client` through `mcpframe proxy --` in front of examples/everything.py, in both eras."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpframe.client import Client

from .conftest import PROXY, child_env

pytestmark = pytest.mark.anyio

EXAMPLES = str(Path(__file__).resolve().parents[2])
SERVE = [sys.executable, "-m", "mcpframe", "serve", "examples.everything:server"]


@pytest.mark.parametrize(("mode", "revision"), [("legacy", "2025-11-25"), ("modern", "2026-07-28")])
async def test_everything_through_the_proxy(mode: str, revision: str) -> None:
    logged: list[Any] = []
    progress: list[float] = []

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        text = params["messages"][0]["content"]["text"]
        return {"role": "assistant", "content": {"type": "text", "text": text.upper()}, "model": "m"}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}}

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    command = [*PROXY, "--", *SERVE]
    env = {**child_env(), "PYTHONPATH": child_env()["PYTHONPATH"] + ":" + EXAMPLES}
    client = Client.stdio(
        command[0], command[1:], env=env, mode=mode, sampling_handler=sample,
        elicitation_handler=elicit, logging_handler=logged.append,
    )  # fmt: skip
    with anyio.fail_after(30):
        async with client:
            assert client.protocol_version == revision
            assert len(await client.list_tools()) >= 10
            text = (await client.call_tool("test_simple_text"))["content"][0]["text"]
            assert text.startswith("This is a simple text response")
            await client.call_tool("test_tool_with_progress", on_progress=on_progress)
            assert progress == [0, 50, 100]
            await client.set_logging_level("info")  # 2026-07-28 logs only at a level the client asked for
            await client.call_tool("test_tool_with_logging")
            assert [entry["data"] for entry in logged][-3:] == [
                "Tool execution started", "Tool processing data", "Tool execution completed",
            ]  # fmt: skip
            sampled = await client.call_tool("test_sampling", {"prompt": "hello"})
            assert sampled["content"][0]["text"] == "LLM response: HELLO"
            elicited = await client.call_tool("test_elicitation", {"message": "who?"})
            assert "action=accept" in elicited["content"][0]["text"]
            assert "ada@example.org" in elicited["content"][0]["text"]
