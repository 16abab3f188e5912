"""`http.connect` against real Streamable HTTP servers on 127.0.0.1: mcpframe's own and the official SDK's.

mcpframe's server runs in this event loop (`serve_http` on a random port); the SDK's (mcp 2.3.0) in a child
process, in its three shapes: stateful SSE, JSON responses, stateless. Both protocol eras where the server
speaks them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import httpx
import pytest
from tests.conformance.harness import serve_everything_http
from tests.streamable_http._client_support import sdk_server

from mcpframe.http import connect
from mcpframe.http.client import StreamableHTTPTransport
from mcpframe.http.server import HttpOptions, serve_http
from mcpframe.server import Context, Server

pytestmark = pytest.mark.anyio


def make_server() -> Server:
    """Tools that answer at once, report progress and log, ask the client, or take a while."""
    server = Server("http-client-test", version="1.0.0")

    @server.tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Report progress and log before answering."""
        await ctx.report_progress(1, 2)
        await ctx.info("halfway")
        await ctx.report_progress(2, 2)
        return "done"

    @server.tool
    async def ask(ctx: Context) -> str:
        """Ask the user (elicitation) and the model (sampling)."""
        answer = await ctx.elicit("name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        prompt = {"role": "user", "content": {"type": "text", "text": answer["content"]["name"]}}
        sampled = await ctx.sample([prompt], max_tokens=5)
        return str(sampled["content"]["text"])

    @server.tool
    async def slow() -> str:
        """Answer after 0.3 s (long past the 50 ms after which the server closes a quiet stream)."""
        await anyio.sleep(0.3)
        return "slow done"

    return server


@contextlib.asynccontextmanager
async def mcpframe_server(server: Server | None = None, **options: Any) -> AsyncIterator[str]:
    """mcpframe's HTTP server in this event loop; yields its URL."""
    ready = anyio.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async with anyio.create_task_group() as tg:
        opts = HttpOptions(**options)
        served = server or make_server()
        tg.start_soon(lambda: serve_http(served, port=0, options=opts, ready=on_ready))
        with anyio.fail_after(10):
            await ready.wait()
        yield urls[0]
        tg.cancel_scope.cancel()


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "ada"}}


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    text = params["messages"][0]["content"]["text"].upper()
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}


HANDLERS: dict[str, Any] = {"elicitation_handler": elicit, "sampling_handler": sample}


@pytest.mark.parametrize(("mode", "era"), [("legacy", "legacy"), ("auto", "modern")])
async def test_mcpframe_server(mode: str, era: str) -> None:
    logs: list[Any] = []
    progress: list[tuple[float, float | None]] = []
    options: dict[str, Any] = {"mode": mode, "logging_handler": logs.append, **HANDLERS}
    async with mcpframe_server() as url, connect(url, **options) as client:
        assert client.era == era
        assert {t["name"] for t in await client.list_tools()} == {"echo", "chatty", "ask", "slow"}
        with anyio.fail_after(10):
            echoed = await client.call_tool("echo", {"text": "héllo"})
            chatty = await client.call_tool("chatty", {}, on_progress=lambda p, t, m: progress.append((p, t)))
            asked = await client.call_tool("ask", {})
    assert echoed["content"][0]["text"] == "héllo"
    assert chatty["content"][0]["text"] == "done"
    assert progress == [(1, 2), (2, 2)]
    assert asked["content"][0]["text"] == "ADA"
    if era == "legacy":  # 2026-07-28 has no setLevel; the server logs only at the level asked for per request
        assert any(entry.get("data") == "halfway" for entry in logs)


async def test_mcpframe_server_closes_quiet_streams_and_the_client_resumes() -> None:
    resumed: list[httpx.Request] = []

    async def spy(request: httpx.Request) -> None:
        if request.method == "GET" and "last-event-id" in request.headers:
            resumed.append(request)

    async with (
        mcpframe_server(close_idle_streams=0.05, retry_ms=20) as url,
        httpx.AsyncClient(timeout=httpx.Timeout(10, read=None), event_hooks={"request": [spy]}) as http,
        connect(url, mode="legacy", http_client=http) as client,
    ):
        with anyio.fail_after(10):
            answer = await client.call_tool("slow", {})
    assert answer["content"][0]["text"] == "slow done"
    assert resumed, "the POST stream was closed early, so the answer must have come on a resumed GET"
    assert all(r.headers["mcp-session-id"] for r in resumed)


async def test_subscriptions_listen_over_http() -> None:
    server = make_server()
    changed = anyio.Event()

    def on_notification(method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            changed.set()

    async with (
        mcpframe_server(server) as url,
        connect(url, transport="streamable-http", notification_handler=on_notification) as client,
    ):
        transport = client.session.transport
        assert isinstance(transport, StreamableHTTPTransport)
        assert client.era == "modern"
        with anyio.fail_after(10):
            async with client.listen(tools=True) as accepted:
                assert accepted.get("toolsListChanged") is True
                assert transport.in_flight == 1  # the listen request's stream stays open

                @server.tool
                def late() -> str:
                    """Registered while a client listens."""
                    return "late"

                await changed.wait()
            while transport.in_flight:  # leaving the block cancelled the request and closed its stream
                await anyio.sleep(0.01)
            assert "late" in {t["name"] for t in await client.list_tools()}


SDK_SHAPES = [
    pytest.param([], id="sse"),
    pytest.param(["--json"], id="json"),
    pytest.param(["--stateless"], id="stateless"),
]


@pytest.fixture(scope="module", params=SDK_SHAPES)
def sdk_url(request: pytest.FixtureRequest) -> Any:
    flags: Sequence[str] = request.param
    with sdk_server(flags) as url:
        yield url, flags


async def test_sdk_server_legacy(sdk_url: tuple[str, Sequence[str]]) -> None:
    url, flags = sdk_url
    progress: list[tuple[float, float | None]] = []
    async with connect(url, mode="legacy", **HANDLERS) as client:
        assert client.era == "legacy"
        assert client.server_info == {"name": "sdk-http-server", "version": "2.3.0"}
        with anyio.fail_after(10):
            assert {"add", "echo", "count", "greet"} <= {t["name"] for t in await client.list_tools()}
            added = await client.call_tool("add", {"a": 2, "b": 3})
            counted = await client.call_tool(
                "count", {"steps": 3}, on_progress=lambda p, t, m: progress.append((p, t))
            )
            greeted = await client.call_tool("greet", {}) if not flags else None
    assert added["structuredContent"] == {"result": 5}
    assert counted["content"][0]["text"] == "counted 3"
    if not flags:  # only the stateful SSE shape has a back-channel for progress and elicitation
        assert progress == [(1, 3), (2, 3), (3, 3)]
        assert greeted is not None
        assert greeted["content"][0]["text"] == "Hello, ada!"


async def test_sdk_server_modern(sdk_url: tuple[str, Sequence[str]]) -> None:
    url, _ = sdk_url
    async with connect(url, **HANDLERS) as client:
        assert client.era == "modern"
        with anyio.fail_after(10):
            added = await client.call_tool("add", {"a": 20, "b": 22})
            echoed = await client.call_tool("echo", {"text": "ünïcode"})
    assert added["structuredContent"] == {"result": 42}
    assert added["resultType"] == "complete"
    assert echoed["content"][0]["text"] == "ünïcode"


async def test_many_concurrent_calls_on_one_client(sdk_url: tuple[str, Sequence[str]]) -> None:
    url, _ = sdk_url
    results: dict[int, Any] = {}
    async with connect(url, mode="legacy") as client:

        async def one(i: int) -> None:
            results[i] = (await client.call_tool("add", {"a": i, "b": 1}))["structuredContent"]["result"]

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(one, i)
    assert results == {i: i + 1 for i in range(40)}


@pytest.fixture(scope="module")
def everything_url() -> Any:
    """`mcpframe serve examples.everything:server --http` (child; quiet streams closed after 50 ms)."""
    with serve_everything_http() as url:
        yield url


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_everything_example_over_http(everything_url: str, mode: str) -> None:
    progress: list[float] = []
    logs: list[Any] = []
    handlers: dict[str, Any] = {"mode": mode, "logging_handler": logs.append, **HANDLERS}
    async with connect(everything_url, **handlers) as client:
        if mode == "legacy":
            await client.set_logging_level("info")
        with anyio.fail_after(20):
            assert len(await client.list_tools()) >= 10
            slow = await client.call_tool("test_reconnection", {})  # outlives the 50 ms quiet-stream close
            counted = await client.call_tool(
                "test_tool_with_progress", {}, on_progress=lambda p, t, m: progress.append(p)
            )
            logged = await client.call_tool("test_tool_with_logging", {})
            sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
            elicited = await client.call_tool("test_elicitation", {"message": "who?"})
            (text,) = await client.read_resource("test://static-text")
            templated = await client.read_resource("test://template/7/data")
            prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    assert slow["content"][0]["text"] == "Reconnection test completed"
    assert counted["content"][0]["text"] == "Progress test completed"
    assert progress == [0, 50, 100]
    assert logged["content"][0]["text"] == "Logging test completed"
    assert sampled["content"][0]["text"] == "LLM response: HI"
    assert "action=accept" in elicited["content"][0]["text"]
    assert text["text"] == "This is the content of the static text resource."
    assert '"id":"7"' in templated[0]["text"].replace(" ", "")
    assert prompt["messages"]
    if mode == "legacy":
        assert [entry["data"] for entry in logs] == [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
