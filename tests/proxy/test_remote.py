"""`mcpframe proxy URL`: a stdio client reaching `mcpframe serve --http examples/everything.py` through it,
over Streamable HTTP and over the legacy SSE transport, with headers passed on and HTTP refusals named."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.proxy._listen_support import SERVE_EVERYTHING, child_env, running

from mcpframe.client import Client

pytestmark = pytest.mark.anyio

TOKEN = "remote-s3cret"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with running([*SERVE_EVERYTHING, "--http", "--port", "0"]) as url:
        yield url


@pytest.fixture(scope="module")
def token_url() -> Iterator[str]:
    with running([*SERVE_EVERYTHING, "--http", "--port", "0"], MCPFRAME_AUTH_TOKEN=TOKEN) as url:
        yield url


def through_proxy(url: str, *flags: str, **settings: Any) -> Client:
    return Client.stdio(sys.executable, ["-m", "mcpframe", "proxy", url, *flags], env=child_env(), **settings)


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    text = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"echo {text}"}, "model": "m"}


@pytest.mark.parametrize("path", ["/mcp", "/sse"])
async def test_a_stdio_client_reaches_the_remote_server(server_url: str, path: str) -> None:
    url = server_url.removesuffix("/mcp") + path  # /sse: the legacy transport, detected by the proxy
    seen: list[float] = []
    with anyio.fail_after(30):
        async with through_proxy(url, mode="legacy", sampling_handler=sample) as client:
            names = {tool["name"] for tool in await client.list_tools()}
            assert "test_sampling" in names
            result = await client.call_tool(
                "test_tool_with_progress", {}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert result["content"][0]["text"] == "Progress test completed"
            result = await client.call_tool("test_sampling", {"prompt": "hi"})
            assert result["content"][0]["text"] == "LLM response: echo hi"
    assert seen == [0, 50, 100]


async def test_the_2026_era_through_the_remote_proxy(server_url: str) -> None:
    with anyio.fail_after(30):
        async with through_proxy(server_url) as client:
            assert client.era == "modern"
            result = await client.call_tool("test_simple_text", {})
            assert result["content"][0]["text"] == "This is a simple text response for testing."


async def test_headers_are_passed_and_a_401_is_named(token_url: str) -> None:
    with anyio.fail_after(30):
        async with through_proxy(token_url, "--header", f"Authorization: Bearer {TOKEN}") as client:
            result = await client.call_tool("test_simple_text", {})
            assert result["content"][0]["text"].startswith("This is a simple text")
        with pytest.raises(Exception, match="HTTP 401"):
            async with through_proxy(token_url, mode="legacy") as client:
                await client.list_tools()


def test_malformed_input_is_answered_and_end_of_input_exits_0(server_url: str) -> None:
    lines = [
        b"{not json\n",
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": {}}}).encode() + b"\n",
    ]
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    data = json.dumps(initialize).encode() + b"\n" + b"".join(lines)
    done = subprocess.run(
        [sys.executable, "-m", "mcpframe", "proxy", server_url],
        input=data,
        check=False,
        capture_output=True,
        env=child_env(),
        timeout=30,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr
    by_id = {answer.get("id"): answer for answer in answers}
    assert by_id[None]["error"]["code"] == -32700  # the broken line, answered by the proxy itself
    # where: it starts right after the initialize line, and fails at its second byte
    assert by_id[None]["error"]["data"]["offset"] == len(json.dumps(initialize)) + 1
    assert by_id[None]["error"]["data"]["at"] == 1
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
