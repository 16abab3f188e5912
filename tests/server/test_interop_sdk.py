"""The official MCP SDK client drives `mcpframe serve examples.everything:server` over stdio."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

import mcpframe

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


def _params() -> StdioServerParameters:
    env = dict(os.environ)
    # The child imports the same mcpframe as this test run (the source tree or an installed build).
    package_root = str(Path(mcpframe.__file__).absolute().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, str(ROOT), env.get("PYTHONPATH")]))
    args = ["-m", "mcpframe", "serve", "examples.everything:server"]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_official_client_over_stdio() -> None:
    logs: list[Any] = []
    progress: list[float] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled!"), model="sdk"
        )

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    with anyio.fail_after(60):
        async with (
            stdio_client(_params()) as (read, write),
            ClientSession(read, write, logging_callback=on_log, sampling_callback=on_sample) as client,
        ):
            init = await client.initialize()
            assert init.server_info.name == "mcpframe-everything"
            assert init.protocol_version == "2025-11-25"
            tools = await client.list_tools()
            assert len(tools.tools) == 14
            text = await client.call_tool("test_simple_text", {})
            assert text.content[0].text == "This is a simple text response for testing."  # type: ignore[union-attr]
            image = await client.call_tool("test_image_content", {})
            assert image.content[0].type == "image"
            error = await client.call_tool("test_error_handling", {})
            assert error.is_error is True
            sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
            assert sampled.content[0].text == "LLM response: sampled!"  # type: ignore[union-attr]
            await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            assert progress == [0, 50, 100]
            await client.set_logging_level("debug")
            await client.call_tool("test_tool_with_logging", {})
            resources = await client.list_resources()
            assert {str(r.uri) for r in resources.resources} >= {"test://static-text", "test://static-binary"}
            read_text = await client.read_resource("test://static-text")
            assert read_text.contents[0].text.startswith("This is the content")  # type: ignore[union-attr]
            templ = await client.read_resource("test://template/123/data")
            assert "123" in templ.contents[0].text  # type: ignore[union-attr]
            templates = await client.list_resource_templates()
            assert templates.resource_templates[0].uri_template == "test://template/{id}/data"
            prompts = await client.list_prompts()
            assert len(prompts.prompts) == 4
            prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            assert "arg1='a'" in prompt.messages[0].content.text  # type: ignore[union-attr]
            done = await client.complete(
                types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": "te"},
            )
            assert done.completion.values == ["test", "testValue1", "testing"]
            await client.send_ping()
    assert len(logs) == 3


async def test_official_client_modern_era_over_stdio() -> None:
    logs: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        raise AssertionError("2026-07-28 servers ask through input_required, never a request")

    with anyio.fail_after(60):
        async with (
            stdio_client(_params()) as (read, write),
            ClientSession(
                read, write, logging_callback=on_log, sampling_callback=on_sample, log_level="debug"
            ) as client,
        ):
            discovered = await client.discover()
            assert discovered.supported_versions[0] == "2026-07-28"
            assert client.protocol_version == "2026-07-28"
            assert len((await client.list_tools()).tools) == 14
            first = await client.call_tool("test_sampling", {"prompt": "hi"}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            assert first.input_requests is not None
            (key,) = first.input_requests
            answer = types.CreateMessageResult(
                role="assistant", content=types.TextContent(type="text", text="sampled!"), model="sdk"
            )
            final = await client.call_tool(
                "test_sampling",
                {"prompt": "hi"},
                input_responses={key: answer},
                request_state=first.request_state,
            )
            assert final.content[0].text == "LLM response: sampled!"  # type: ignore[union-attr]
            await client.call_tool("test_tool_with_logging", {})
            read_text = await client.read_resource("test://static-text")
            assert read_text.contents[0].text.startswith("This is the content")  # type: ignore[union-attr]
            prompt = await client.get_prompt("test_simple_prompt")
            assert prompt.messages[0].role == "user"
    assert len(logs) == 3
