"""`Client(server)` in memory against the everything fixtures, in both eras."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from examples.everything import server
from tests._blocked import all_blocked

from mcpframe.client import Client

pytestmark = pytest.mark.anyio


async def _sample(params: dict[str, Any]) -> dict[str, Any]:
    text = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"echo {text}"}, "model": "m"}


async def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"username": "ann", "email": "a@example.com"}}


@pytest.mark.parametrize(("mode", "era"), [("auto", "modern"), ("legacy", "legacy")])
async def test_client_in_memory(mode: Any, era: str) -> None:
    logs: list[Any] = []
    progress: list[float] = []

    def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    with anyio.fail_after(20):
        async with Client(
            server,
            mode=mode,
            sampling_handler=_sample,
            elicitation_handler=_elicit,
            logging_handler=logs.append,
        ) as client:
            assert client.era == era
            assert client.server_info == {"name": "mcpframe-everything", "version": "1.0.0"}
            assert len(await client.list_tools()) == 14
            sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
            elicited = await client.call_tool("test_elicitation", {"message": "who?"})
            await client.set_logging_level("debug")
            await client.call_tool("test_tool_with_logging")
            await client.call_tool("test_tool_with_progress", on_progress=on_progress)
            contents = await client.read_resource("test://template/7/data")
            prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "x", "arg2": "y"})
            completion = await client.complete(
                {"type": "ref/resource", "uri": "test://template/{id}/data"}, {"name": "id", "value": "12"}
            )
            with anyio.fail_after(5):
                while len(logs) < 3 or len(progress) < 3:
                    await all_blocked()
    assert sampled["content"][0]["text"] == "LLM response: echo hi"
    assert "ann" in elicited["content"][0]["text"]
    assert [entry["data"] for entry in logs] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    assert progress == [0, 50, 100]
    assert '"id":"7"' in contents[0]["text"]
    assert "arg1='x'" in prompt["messages"][0]["content"]["text"]
    assert completion["values"] == ["123", "124"]
