"""`mcpframe proxy --listen URL -- mcpframe serve examples/everything.py`: real clients through the bridge.

One proxy process serves the whole module (each client session gets its own upstream child). The clients:
the official Python SDK's Streamable HTTP client (handshake era: a session and a child of its own),
mcpframe's client (2026-07-28 first: the shared stateless child) and mcpframe's legacy SSE client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import mcp.types as sdk
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests.proxy._listen_support import SERVE_EVERYTHING, listen_command, running

from mcpframe.http import connect, connect_sse

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def proxy_url() -> Iterator[str]:
    with running(listen_command(*SERVE_EVERYTHING)) as url:
        yield url


class Seen:
    """What the SDK client's callbacks received."""

    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.progress: list[float] = []
        self.sampled: list[Any] = []
        self.elicited: list[Any] = []
        self.notifications: list[Any] = []

    async def sample(self, context: Any, params: sdk.CreateMessageRequestParams) -> sdk.CreateMessageResult:
        self.sampled.append(params)
        content = sdk.TextContent(type="text", text="sampled through the proxy")
        return sdk.CreateMessageResult(role="assistant", content=content, model="test-model")

    async def elicit(self, context: Any, params: Any) -> sdk.ElicitResult:
        self.elicited.append(params)
        return sdk.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.org"})

    async def log(self, params: sdk.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append(progress)

    async def on_message(self, message: Any) -> None:
        self.notifications.append(message)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_the_sdk_client_gets_tools_progress_logs_sampling_and_elicitation(proxy_url: str) -> None:
    seen = Seen()
    with anyio.fail_after(30):
        async with (
            streamable_http_client(proxy_url) as (read, write),
            ClientSession(
                read,
                write,
                sampling_callback=seen.sample,
                elicitation_callback=seen.elicit,
                logging_callback=seen.log,
                message_handler=seen.on_message,
            ) as session,
        ):
            init = await session.initialize()
            assert init.server_info.name == "mcpframe-everything"
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"test_simple_text", "test_sampling", "test_elicitation"} <= names
            result = await session.call_tool(
                "test_tool_with_progress", {}, progress_callback=seen.on_progress
            )
            assert text_of(result) == "Progress test completed"
            assert seen.progress == [0, 50, 100]
            result = await session.call_tool("test_tool_with_logging", {})
            assert text_of(result) == "Logging test completed"
            assert seen.logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]
            result = await session.call_tool("test_sampling", {"prompt": "hello"})
            assert text_of(result) == "LLM response: sampled through the proxy"
            assert seen.sampled[0].messages[0].content.text == "hello"
            result = await session.call_tool("test_elicitation", {"message": "who are you?"})
            assert "'username': 'ada'" in text_of(result)
            assert seen.elicited[0].message == "who are you?"
            page = await session.list_resources()
            assert any(str(r.uri) == "test://static-text" for r in page.resources)


async def test_the_mcpframe_client_through_the_proxy_both_eras(proxy_url: str) -> None:
    seen: list[float] = []
    with anyio.fail_after(30):
        for mode in ("auto", "legacy"):
            async with connect(proxy_url, mode=mode) as client:  # type: ignore[arg-type]
                assert client.era == ("modern" if mode == "auto" else "legacy")
                tools = {tool["name"] for tool in await client.list_tools()}
                assert "test_tool_with_progress" in tools
                result = await client.call_tool(
                    "test_tool_with_progress", {}, on_progress=lambda p, t, m: seen.append(p)
                )
                assert result["content"][0]["text"] == "Progress test completed"
    assert seen == [0, 50, 100, 0, 50, 100]


async def test_a_legacy_sse_client_through_the_proxy(proxy_url: str) -> None:
    seen: list[float] = []
    with anyio.fail_after(30):
        async with connect_sse(proxy_url.removesuffix("/mcp") + "/sse") as client:
            result = await client.call_tool("test_simple_text", {})
            assert result["content"][0]["text"] == "This is a simple text response for testing."
            result = await client.call_tool(
                "test_tool_with_progress", {}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert result["content"][0]["text"] == "Progress test completed"
    assert seen == [0, 50, 100]


async def test_two_sessions_with_the_same_ids_get_their_own_answers(proxy_url: str) -> None:
    async def one(tool: str) -> str:
        async with streamable_http_client(proxy_url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()  # both sessions number their requests alike: 0, 1, ...
            return text_of(await session.call_tool(tool, {}))

    answers: dict[str, str] = {}

    async def run(tool: str) -> None:
        answers[tool] = await one(tool)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "test_tool_with_logging")
            tg.start_soon(run, "test_simple_text")
    assert answers == {
        "test_tool_with_logging": "Logging test completed",
        "test_simple_text": "This is a simple text response for testing.",
    }


async def test_host_and_origin_checks_still_apply(proxy_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as http:
        bad_host = await http.post(proxy_url, json=body, headers={**headers, "host": "evil.example"})
        bad_origin = await http.post(
            proxy_url, json=body, headers={**headers, "origin": "http://evil.example"}
        )
        no_session = await http.post(proxy_url, json=body, headers=headers)
    assert bad_host.status_code == 421
    assert bad_origin.status_code == 403
    assert no_session.status_code == 400
    assert "Mcp-Session-Id" in no_session.json()["error"]["message"]
