"""The official SDK's `sse_client` drives `mcpframe serve examples.everything:server --http` over the legacy
HTTP+SSE transport: every method everything.py serves, server-to-client requests included."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.sse import sse_client

import mcpframe

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


@contextlib.asynccontextmanager
async def everything_over_http(*flags: str) -> AsyncIterator[tuple[str, str]]:
    """`mcpframe serve examples.everything:server --http --port 0` in a child; yields its /sse URL (`""`
    if it announced none) and its /mcp URL."""
    env = dict(os.environ)
    package_root = str(Path(mcpframe.__file__).absolute().parent.parent)  # the mcpframe under test
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "mcpframe", "serve", "examples.everything:server", "--http"]
    async with await anyio.open_process([*command, "--port", "0", *flags], cwd=ROOT, env=env) as child:
        assert child.stderr is not None
        seen = b""
        try:
            with anyio.fail_after(60):
                while b"Streamable HTTP on " not in seen:  # the last line of the start-up
                    seen += await child.stderr.receive()
            lines = seen.decode().splitlines()
            urls = {line.split(" on ")[0]: line.rsplit(" ", 1)[-1] for line in lines if " on " in line}
            yield urls.get("mcpframe serve: legacy HTTP+SSE", ""), urls["mcpframe serve: Streamable HTTP"]
        finally:
            child.terminate()
            with anyio.fail_after(30):
                await child.wait()


class Callbacks:
    """What the client answers the server's requests with, and what it was told."""

    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.progress: list[float] = []

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        text = types.TextContent(type="text", text="sampled!")
        return types.CreateMessageResult(role="assistant", content=text, model="sdk")

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"username": "ann", "email": "a@example.com"})

    async def on_progress(self, done: float, total: float | None, message: str | None) -> None:
        self.progress.append(done)


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_the_official_sse_client_over_every_method() -> None:
    seen = Callbacks()
    with anyio.fail_after(90):
        async with everything_over_http() as (url, _):
            assert url.endswith("/sse"), url
            async with (
                sse_client(url) as (read, write),
                ClientSession(
                    read,
                    write,
                    logging_callback=seen.log,
                    sampling_callback=seen.sample,
                    elicitation_callback=seen.elicit,
                ) as client,
            ):
                await _every_method(client, seen)
    assert len(seen.logs) == 3
    assert seen.progress == [0, 50, 100]


async def _every_method(client: ClientSession, seen: Callbacks) -> None:
    init = await client.initialize()
    assert init.server_info.name == "mcpframe-everything"
    assert len((await client.list_tools()).tools) == 14
    text = await client.call_tool("test_simple_text", {})
    assert text.content[0].text == "This is a simple text response for testing."  # type: ignore[union-attr]
    assert (await client.call_tool("test_image_content", {})).content[0].type == "image"
    assert (await client.call_tool("test_error_handling", {})).is_error is True
    sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
    assert sampled.content[0].text == "LLM response: sampled!"  # type: ignore[union-attr]
    elicited = await client.call_tool("test_elicitation", {"message": "who?"})
    assert "action=accept" in elicited.content[0].text  # type: ignore[union-attr]
    assert "ann" in elicited.content[0].text  # type: ignore[union-attr]
    await client.call_tool("test_tool_with_progress", {}, progress_callback=seen.on_progress)
    await client.set_logging_level("debug")
    await client.call_tool("test_tool_with_logging", {})
    resources = await client.list_resources()
    assert {str(r.uri) for r in resources.resources} >= {"test://static-text", "test://watched-resource"}
    read_text = await client.read_resource("test://static-text")
    assert read_text.contents[0].text.startswith("This is the content")  # type: ignore[union-attr]
    templated = await client.read_resource("test://template/123/data")
    assert "123" in templated.contents[0].text  # type: ignore[union-attr]
    templates = await client.list_resource_templates()
    assert templates.resource_templates[0].uri_template == "test://template/{id}/data"
    await client.subscribe_resource("test://watched-resource")
    await client.unsubscribe_resource("test://watched-resource")
    assert len((await client.list_prompts()).prompts) == 4
    prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    assert "arg1='a'" in prompt.messages[0].content.text  # type: ignore[union-attr]
    done = await client.complete(
        types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
        {"name": "arg1", "value": "te"},
    )
    assert done.completion.values == ["test", "testValue1", "testing"]
    ids = await client.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data"),
        {"name": "id", "value": "1"},
    )
    assert ids.completion.values
    await client.send_ping()


async def test_the_flag_off_serves_no_legacy_paths() -> None:
    with anyio.fail_after(90):
        async with everything_over_http("--no-legacy-sse") as (url, endpoint), httpx.AsyncClient() as http:
            assert url == ""  # no legacy line at start-up
            sse = await http.get(endpoint.replace("/mcp", "/sse"), headers={"accept": "text/event-stream"})
            assert sse.status_code == 404
