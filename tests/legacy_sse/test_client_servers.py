"""The legacy SSE client against real servers: the official SDK's `.sse_app()`, server-everything's SSE mode,
mcpframe's own legacy endpoint; and the auto probe against both kinds (a Streamable HTTP server is never
probed)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.streamable_http._client_support import serve_asgi
from tests.streamable_http._server_support import make_server

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.http import connect, connect_sse
from mcpframe.http.client_sse_auto import AutoTransport
from mcpframe.http.server import HttpOptions, StreamableHTTPServer
from mcpframe.session import JSONRPCError

from ._client_support import Counted, everything_missing, everything_sse, sdk_sse_server

pytestmark = pytest.mark.anyio


def text_of(result: dict[str, Any]) -> str:
    return "".join(item.get("text", "") for item in result["content"])


@pytest.fixture(scope="module")
def sdk_base() -> Iterator[str]:
    with sdk_sse_server() as base:
        yield base


async def exercise_sdk(client: Client) -> None:
    """Every kind of call the SDK test server offers, with its answers checked."""
    assert client.server_info is not None
    assert client.server_info["name"] == "sdk-sse-server"
    assert {t["name"] for t in await client.list_tools()} == {"add", "count", "nap", "fail"}
    assert text_of(await client.call_tool("add", {"a": 20, "b": 22})) == "42"
    seen: list[float] = []
    counted = await client.call_tool("count", {"steps": 3}, on_progress=lambda p, t, m: seen.append(p))
    assert text_of(counted) == "counted 3"
    assert seen == [1, 2, 3]  # progress is sent before the answer, on the same stream
    failed = await client.call_tool("fail", {})
    assert failed["isError"] is True
    assert "fail" in text_of(failed)
    assert [p["name"] for p in await client.list_prompts()] == ["review"]
    prompt = await client.get_prompt("review", {"code": "x = 1"})
    assert "Please review: x = 1" in prompt["messages"][0]["content"]["text"]
    assert [r["uri"] for r in await client.list_resources()] == ["test://static"]
    templates = await client.list_resource_templates()
    assert [t["uriTemplate"] for t in templates] == ["test://items/{item}"]
    assert (await client.read_resource("test://items/7"))[0]["text"] == "item 7"
    await client.ping()
    with pytest.raises(JSONRPCError) as caught:
        await client.request("no/such/method", {})
    assert caught.value.code == jsonrpc.METHOD_NOT_FOUND


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_sse_server(sdk_base: str, mode: Any) -> None:
    with anyio.fail_after(30):
        async with connect_sse(sdk_base + "/sse", mode=mode) as client:
            if mode == "legacy":
                assert client.protocol_version == "2025-11-25"
            await exercise_sdk(client)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_auto_reaches_the_sdk_sse_server_through_the_probe(sdk_base: str, mode: Any) -> None:
    transport = AutoTransport(sdk_base + "/sse")
    with anyio.fail_after(30):
        async with Client(opener=lambda: transport, mode=mode) as client:
            assert transport.kind == "sse"
            assert transport.legacy is not None
            assert transport.legacy.session_id
            await exercise_sdk(client)


async def test_auto_does_not_probe_a_streamable_http_server() -> None:
    counted = Counted(StreamableHTTPServer(make_server(), HttpOptions()).app)
    mode: Any
    for mode in ("auto", "legacy"):
        counted.seen.clear()
        async with serve_asgi(counted) as url:
            transport = AutoTransport(url)
            async with Client(opener=lambda: transport, mode=mode) as client:  # noqa: B023 (entered here)
                with anyio.fail_after(10):
                    assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
                    assert transport.kind == "streamable-http"
        first, *rest = counted.seen
        assert first == ("POST", "/mcp", False)  # the real first request (server/discover or initialize)
        assert ("GET", "/mcp", False) not in rest  # no probe: a GET outside a session never happened
        assert all(path == "/mcp" for _, path, _ in counted.seen)


async def test_mcpframe_legacy_endpoint() -> None:
    counted = Counted(StreamableHTTPServer(make_server(), HttpOptions()).app)
    notes: list[float] = []
    async with serve_asgi(counted, "/sse") as url:
        for mode in ("legacy", "auto"):
            async with connect_sse(url, mode=mode) as client:  # type: ignore[arg-type]
                with anyio.fail_after(10):
                    assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
                    notes.clear()
                    done = await client.call_tool("chatty", {}, on_progress=lambda p, t, m: notes.append(p))
                    assert text_of(done) == "done"
                    assert notes == [1, 2]
    assert ("GET", "/sse", False) in counted.seen


# ---------------------------------------------------------------------- server-everything (TypeScript)

_missing = everything_missing()


@pytest.mark.skipif(_missing is not None and not os.environ.get("CI"), reason=_missing or "")
@pytest.mark.parametrize("kind", ["sse", "auto"])
async def test_everything_server_in_sse_mode(kind: Any) -> None:
    if _missing is not None:
        raise RuntimeError(_missing)  # in CI a missing peer is a failure, never a silent skip

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"}

    with everything_sse() as base, anyio.fail_after(60):
        async with connect(base + "/sse", transport=kind, timeout=30, sampling_handler=sample) as client:
            assert client.era == "legacy"
            names = {tool["name"] for tool in await client.list_tools()}
            assert {"echo", "get-sum", "trigger-sampling-request"} <= names
            assert text_of(await client.call_tool("echo", {"message": "hi"})) == "Echo: hi"
            assert "42" in text_of(await client.call_tool("get-sum", {"a": 40, "b": 2}))
            seen: list[float] = []
            args = {"duration": 0.3, "steps": 3}
            await client.call_tool(
                "trigger-long-running-operation", args, on_progress=lambda p, t, m: seen.append(p)
            )
            sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 5})
            assert "sampled" in text_of(sampled)
            assert await client.list_prompts()
            assert await client.list_resources()
            await client.ping()
            with pytest.raises(JSONRPCError) as caught:
                await client.request("no/such/method", {})
            assert caught.value.code == jsonrpc.METHOD_NOT_FOUND
