"""tools/list and tools/call on the legacy revisions: results, errors, Context features."""

from __future__ import annotations

import threading
from typing import Annotated, Any

import anyio
import msgspec
import pytest

from mcpframe import jsonrpc
from mcpframe.server import Context, Server, ToolResult, image, resource_link, text
from mcpframe.session import JSONRPCError, Request

from ._driver import legacy

pytestmark = pytest.mark.anyio


class Sum(msgspec.Struct):
    total: int


def _server() -> Server:
    server = Server("tools")

    @server.tool
    def add(a: int, b: Annotated[int, "second"] = 1) -> Sum:
        """Add."""
        return Sum(a + b)

    @server.tool
    def where() -> str:
        """Thread name."""
        return "main" if threading.current_thread() is threading.main_thread() else "worker"

    @server.tool
    async def fail() -> str:
        """Raises."""
        raise RuntimeError("boom")

    @server.tool
    def blocks() -> list[Any]:
        """Several blocks."""
        return [text("a"), image(b"\x89PNG", "image/png"), resource_link("x://r", "r"), "b"]

    @server.tool
    def custom() -> ToolResult:
        """Full control."""
        return ToolResult([text("bad")], structured={"k": 1}, is_error=True, meta={"m": 1})

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Logs at every level and reports progress."""
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, {"at": level}, logger="chatty")
        await ctx.report_progress(1, 2, "half")
        await ctx.report_progress(2, 2)
        return "done"

    @server.tool
    async def ask(ctx: Context) -> str:
        """Samples, elicits and lists roots through the client."""
        sampled = await ctx.sample([{"role": "user", "content": text("hi")}], max_tokens=5)
        elicited = await ctx.elicit("name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        roots = await ctx.list_roots()
        return f"{sampled['content']['text']}|{elicited['content']['n']}|{roots[0]['uri']}"

    return server


async def test_list_describes_every_tool() -> None:
    async with legacy(_server()) as client:
        tools = {t["name"]: t for t in (await client.request("tools/list"))["tools"]}
    assert set(tools) == {"add", "where", "fail", "blocks", "custom", "chatty", "ask"}
    assert tools["add"]["inputSchema"]["properties"]["b"]["description"] == "second"
    assert tools["add"]["outputSchema"]["required"] == ["total"]


async def test_output_schema_is_hidden_from_old_revisions() -> None:
    async with legacy(_server(), "2025-03-26") as client:
        tools = {t["name"]: t for t in (await client.request("tools/list"))["tools"]}
        result = await client.request("tools/call", {"name": "add", "arguments": {"a": 1}})
    assert "outputSchema" not in tools["add"]
    assert result == {"content": [{"type": "text", "text": '{"total":2}'}]}


async def test_structured_result() -> None:
    async with legacy(_server()) as client:
        result = await client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert result == {"content": [{"type": "text", "text": '{"total":5}'}], "structuredContent": {"total": 5}}


async def test_sync_tools_run_in_a_worker_thread() -> None:
    async with legacy(_server()) as client:
        result = await client.request("tools/call", {"name": "where"})
    assert result["content"][0]["text"] == "worker"


async def test_tool_exceptions_are_error_results() -> None:
    async with legacy(_server()) as client:
        result = await client.request("tools/call", {"name": "fail", "arguments": {}})
    assert result["isError"] is True
    assert "boom" in result["content"][0]["text"]


async def test_content_blocks_and_tool_result() -> None:
    async with legacy(_server()) as client:
        blocks = await client.request("tools/call", {"name": "blocks"})
        custom = await client.request("tools/call", {"name": "custom"})
    assert [b["type"] for b in blocks["content"]] == ["text", "image", "resource_link", "text"]
    assert blocks["content"][1]["data"] == "iVBORw=="
    assert custom == {
        "content": [{"type": "text", "text": "bad"}],
        "structuredContent": {"k": 1},
        "isError": True,
        "_meta": {"m": 1},
    }


async def test_unknown_tool_is_invalid_params() -> None:
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/call", {"name": "nope"})
    assert info.value.code == jsonrpc.INVALID_PARAMS
    assert "nope" in info.value.message


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_bad_arguments_before_2025_11_25_are_protocol_errors(version: str) -> None:
    async with legacy(_server(), version) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/call", {"name": "add", "arguments": {"a": "x"}})
    assert info.value.code == jsonrpc.INVALID_PARAMS
    assert "$.a" in info.value.message


async def test_bad_arguments_from_2025_11_25_are_tool_errors() -> None:
    async with legacy(_server()) as client:
        result = await client.request("tools/call", {"name": "add", "arguments": {}})
    assert result["isError"] is True
    assert "missing required field `a`" in result["content"][0]["text"]


async def test_logging_is_filtered_by_the_level_set() -> None:
    async with legacy(_server()) as client:
        await client.request("tools/call", {"name": "chatty"})
        everything = [p["level"] for p in await client.wait_for("notifications/message", 4)]
        await client.request("logging/setLevel", {"level": "warning"})
        await client.request("tools/call", {"name": "chatty"})
        later = [p["level"] for p in await client.wait_for("notifications/message", 6)][4:]
    assert everything == ["debug", "info", "warning", "error"]
    assert later == ["warning", "error"]
    assert client.notes_of("notifications/message")[0] == {
        "level": "debug",
        "data": {"at": "debug"},
        "logger": "chatty",
    }


async def test_progress_is_sent_for_the_request_token() -> None:
    async with legacy(_server()) as client:
        params = {"name": "chatty", "_meta": {"progressToken": "tok"}}
        await client.request("tools/call", params)
        notes = await client.wait_for("notifications/progress", 2)
    assert notes == [
        {"progressToken": "tok", "progress": 1, "total": 2, "message": "half"},
        {"progressToken": "tok", "progress": 2, "total": 2},
    ]


async def test_requests_back_to_the_client() -> None:
    seen: list[str] = []

    async def client_side(request: Request) -> Any:
        seen.append(request.method)
        if request.method == "sampling/createMessage":
            assert request.params["maxTokens"] == 5
            return {"role": "assistant", "content": {"type": "text", "text": "S"}, "model": "m"}
        if request.method == "elicitation/create":
            assert "mode" not in request.params
            return {"action": "accept", "content": {"n": "E"}}
        return {"roots": [{"uri": "file:///r"}]}

    caps = {"sampling": {}, "elicitation": {}, "roots": {}}
    async with legacy(_server(), capabilities=caps, client_handler=client_side) as client:
        result = await client.request("tools/call", {"name": "ask"})
    assert result["content"][0]["text"] == "S|E|file:///r"
    assert seen == ["sampling/createMessage", "elicitation/create", "roots/list"]


async def test_missing_client_capability_is_a_tool_error() -> None:
    async with legacy(_server()) as client:
        result = await client.request("tools/call", {"name": "ask"})
    assert result["isError"] is True
    assert "'sampling' capability" in result["content"][0]["text"]


async def test_cancellation_stops_the_tool_and_sends_no_response() -> None:
    server = Server("cancel")
    started = anyio.Event()
    stopped = anyio.Event()

    @server.tool
    async def slow() -> str:
        """Waits forever."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "never"

    async with legacy(server) as client:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    with pytest.raises(anyio.get_cancelled_exc_class()):
                        await client.session.request("tools/call", {"name": "slow"})

                tg.start_soon(call)
                await started.wait()
                tg.cancel_scope.cancel()
            await stopped.wait()
        assert await client.request("ping") == {}


async def test_is_cancelled_in_a_sync_tool() -> None:
    server = Server("cancel")
    running = threading.Event()
    noticed = threading.Event()

    @server.tool
    def spin(ctx: Context) -> str:
        """Spins until cancelled."""
        running.set()
        while not ctx.is_cancelled:
            noticed.wait(0.002)
        noticed.set()
        return "stopped"

    async with legacy(server) as client:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await client.session.request("tools/call", {"name": "spin"})

                tg.start_soon(call)
                await anyio.to_thread.run_sync(running.wait)
                tg.cancel_scope.cancel()
            await anyio.to_thread.run_sync(noticed.wait)
    assert noticed.is_set()


@pytest.mark.parametrize(
    ("version", "fields"),
    [
        ("2024-11-05", {"name", "description", "inputSchema"}),
        ("2025-06-18", {"name", "description", "inputSchema", "title", "outputSchema"}),
        ("2025-11-25", {"name", "description", "inputSchema", "title", "outputSchema", "icons"}),
    ],
)
async def test_listings_only_carry_fields_the_revision_knows(version: str, fields: set[str]) -> None:
    server = Server("fields")

    @server.tool(title="Shiny", icons=[{"src": "https://example.com/i.png"}])
    def shiny() -> Sum:
        """Shiny."""
        return Sum(1)

    async with legacy(server, version) as client:
        (tool,) = (await client.request("tools/list"))["tools"]
    assert set(tool) == fields


async def test_plain_dicts_are_json_not_content() -> None:
    server = Server("dicts")

    @server.tool(output_schema=False)
    def data() -> dict[str, Any]:
        """A dict that merely has a type key."""
        return {"type": "fruit", "name": "apple"}

    async with legacy(server) as client:
        result = await client.request("tools/call", {"name": "data"})
    assert result == {"content": [{"type": "text", "text": '{"type":"fruit","name":"apple"}'}]}
