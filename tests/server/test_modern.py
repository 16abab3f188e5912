"""The 2026-07-28 revision on the same connection: discover, _meta per request, resultType, MRTR, listen."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpframe import jsonrpc
from mcpframe.server import SUPPORTED_VERSIONS, Context, Server
from mcpframe.server.eras import SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY
from mcpframe.session import JSONRPCError

from ._driver import connect

pytestmark = pytest.mark.anyio

INFO = {"name": "modern", "version": "3.0.0"}


def _server() -> Server:
    server = Server("modern", version="3.0.0", instructions="Hi.")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool
    async def interview(ctx: Context) -> str:
        """Asks two questions in turn."""
        first = await ctx.elicit("name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        second = await ctx.sample([{"role": "user", "content": {"type": "text", "text": "q"}}], max_tokens=3)
        return f"{first['content']['n']}/{second['content']['text']}"

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Logs."""
        await ctx.debug("d")
        await ctx.warning("w")
        return "ok"

    @server.resource("x://r")
    def res() -> str:
        return "r"

    @server.prompt
    def hello() -> str:
        """Hello."""
        return "hello"

    return server


async def test_discover_needs_no_initialize() -> None:
    async with connect(_server()) as client:
        result = await client.modern("server/discover")
    assert result == {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": {
            "logging": {},
            "prompts": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "tools": {"listChanged": True},
        },
        "instructions": "Hi.",
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {SERVER_INFO_KEY: INFO},
    }


async def test_unsupported_version_is_32022_with_the_supported_list() -> None:
    async with connect(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.modern("tools/list", version="1900-01-01")
    assert info.value.code == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION
    assert info.value.data == {"supported": list(SUPPORTED_VERSIONS), "requested": "1900-01-01"}


async def test_every_result_has_result_type() -> None:
    async with connect(_server()) as client:
        tools = await client.modern("tools/list")
        call = await client.modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        read = await client.modern("resources/read", {"uri": "x://r"})
        prompt = await client.modern("prompts/get", {"name": "hello"})
    for result in (tools, call, read, prompt):
        assert result["resultType"] == "complete"
        assert result["_meta"][SERVER_INFO_KEY] == INFO
    for cacheable in (tools, read):
        assert (cacheable["ttlMs"], cacheable["cacheScope"]) == (0, "private")
    assert "ttlMs" not in call
    assert "ttlMs" not in prompt
    assert call["content"] == [{"type": "text", "text": "3"}]


async def test_validation_failures_are_tool_errors_and_missing_resources_32602() -> None:
    async with connect(_server()) as client:
        call = await client.modern("tools/call", {"name": "add", "arguments": {"a": "x"}})
        with pytest.raises(JSONRPCError) as info:
            await client.modern("resources/read", {"uri": "x://none"})
    assert call["isError"] is True
    assert info.value.code == jsonrpc.INVALID_PARAMS


@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "resources/subscribe", "initialize"])
async def test_legacy_only_methods_are_not_found(method: str) -> None:
    async with connect(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.modern(method, {"level": "info", "uri": "x://r"})
    assert info.value.code == jsonrpc.METHOD_NOT_FOUND


async def test_log_level_travels_per_request() -> None:
    async with connect(_server()) as client:
        await client.modern("tools/call", {"name": "chatty"})
        assert client.notes_of("notifications/message") == []
        await client.modern("tools/call", {"name": "chatty"}, log_level="info")
        await client.modern("tools/call", {"name": "chatty"}, log_level="debug")
        notes = await client.wait_for("notifications/message", 3)
    assert [n["data"] for n in notes] == ["w", "d", "w"]


async def test_input_required_round_trips() -> None:
    caps = {"elicitation": {}, "sampling": {}}
    async with connect(_server()) as client:
        first = await client.modern("tools/call", {"name": "interview"}, capabilities=caps)
        assert first["resultType"] == "input_required"
        assert first["inputRequests"] == {
            "elicitation-0": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "name?",
                    "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}},
                },
            }
        }
        answers: dict[str, Any] = {"elicitation-0": {"action": "accept", "content": {"n": "ann"}}}
        retry: dict[str, Any] = {
            "name": "interview",
            "inputResponses": answers,
            "requestState": first["requestState"],
        }
        second = await client.modern("tools/call", retry, capabilities=caps)
        assert list(second["inputRequests"]) == ["sampling-1"]
        sampled = {
            "sampling-1": {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}
        }
        retry = {"name": "interview", "inputResponses": sampled, "requestState": second["requestState"]}
        third = await client.modern("tools/call", retry, capabilities=caps)
    assert third["resultType"] == "complete"
    assert third["content"] == [{"type": "text", "text": "ann/42"}]


async def test_tampered_or_misused_request_state_is_refused() -> None:
    caps = {"elicitation": {}, "sampling": {}}
    async with connect(_server()) as client:
        first = await client.modern("tools/call", {"name": "interview"}, capabilities=caps)
        state = first["requestState"]
        tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        for params in (
            {"name": "interview", "requestState": tampered},
            {"name": "add", "arguments": {"a": 1, "b": 1}, "requestState": state},
        ):
            with pytest.raises(JSONRPCError) as info:
                await client.modern("tools/call", params, capabilities=caps)
            assert info.value.code == jsonrpc.INVALID_PARAMS


async def test_missing_client_capability_is_32021() -> None:
    async with connect(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.modern("tools/call", {"name": "interview"})
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"elicitation": {}}}


async def test_subscriptions_listen() -> None:
    server = _server()
    async with connect(server) as client:
        opened: dict[str, Any] = {}

        async def listen() -> None:
            filters = {
                "toolsListChanged": True,
                "resourceSubscriptions": ["x://r"],
                "promptsListChanged": False,
            }
            opened["result"] = await client.modern("subscriptions/listen", {"notifications": filters})

        async with anyio.create_task_group() as tg:
            tg.start_soon(listen)
            (ack,) = await client.wait_for("notifications/subscriptions/acknowledged")
            sub_id = ack["_meta"][SUBSCRIPTION_ID_KEY]
            assert ack["notifications"] == {"toolsListChanged": True, "resourceSubscriptions": ["x://r"]}

            @server.prompt
            def ignored() -> str:
                """Not asked for."""
                return ""

            server.remove_tool("add")
            server.notify_resource_updated("x://r")
            (changed,) = await client.wait_for("notifications/tools/list_changed")
            (updated,) = await client.wait_for("notifications/resources/updated")
            tg.cancel_scope.cancel()
    assert changed == {"_meta": {SUBSCRIPTION_ID_KEY: sub_id}}
    assert updated == {"uri": "x://r", "_meta": {SUBSCRIPTION_ID_KEY: sub_id}}
    assert client.notes_of("notifications/prompts/list_changed") == []


async def test_both_eras_on_one_connection() -> None:
    async with connect(_server()) as client:
        modern = await client.modern("tools/list")
        await client.initialize("2025-06-18")
        legacy = await client.request("tools/list")
        again = await client.modern("prompts/list")
    assert "resultType" not in legacy
    assert modern["tools"] == legacy["tools"]
    assert again["resultType"] == "complete"


async def test_prompts_and_resources_may_ask_for_input_too() -> None:
    server = Server("mrtr")

    @server.prompt
    async def personal(ctx: Context) -> str:
        """Asks for the user's roots first."""
        roots = await ctx.list_roots()
        return f"roots: {roots[0]['uri']}"

    @server.resource("x://secret")
    async def secret(ctx: Context) -> str:
        answer = await ctx.elicit("password?", {"type": "object", "properties": {"p": {"type": "string"}}})
        return "open" if answer.get("content", {}).get("p") == "sesame" else "closed"

    caps = {"roots": {}, "elicitation": {}}
    async with connect(server) as client:
        ask = await client.modern("prompts/get", {"name": "personal"}, capabilities=caps)
        assert ask["inputRequests"] == {"roots-0": {"method": "roots/list"}}
        assert "ttlMs" not in ask
        answers = {"roots-0": {"roots": [{"uri": "file:///home"}]}}
        prompt = await client.modern(
            "prompts/get", {"name": "personal", "inputResponses": answers}, capabilities=caps
        )
        ask = await client.modern("resources/read", {"uri": "x://secret"}, capabilities=caps)
        reply = {"elicitation-0": {"action": "accept", "content": {"p": "sesame"}}}
        retry = {"uri": "x://secret", "inputResponses": reply, "requestState": ask["requestState"]}
        read = await client.modern("resources/read", retry, capabilities=caps)
    assert prompt["messages"][0]["content"]["text"] == "roots: file:///home"
    assert read["contents"][0]["text"] == "open"
    assert read["ttlMs"] == 0


async def test_a_slow_tool_does_not_block_other_requests() -> None:
    server = Server("slow")
    release = anyio.Event()

    @server.tool
    async def wait() -> str:
        """Waits for the test."""
        await release.wait()
        return "released"

    async with connect(server) as client:
        await client.initialize()
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def call() -> None:
                results.append(await client.request("tools/call", {"name": "wait"}))

            tg.start_soon(call)
            assert await client.request("ping") == {}
            assert (await client.modern("tools/list"))["tools"][0]["name"] == "wait"
            release.set()
    assert results[0]["content"][0]["text"] == "released"
