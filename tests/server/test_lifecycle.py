"""Legacy lifecycle: initialize negotiation, refusal before initialize, capabilities and their enforcement."""

from __future__ import annotations

import pytest

from mcpframe import jsonrpc
from mcpframe.server import LEGACY_VERSIONS, Server
from mcpframe.session import JSONRPCError

from ._driver import connect, legacy

pytestmark = pytest.mark.anyio


def _server() -> Server:
    server = Server("life", version="2.0.0", instructions="Be nice.")

    @server.tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    return server


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_known_versions_are_echoed(version: str) -> None:
    async with connect(_server()) as client:
        result = await client.initialize(version)
    assert result["protocolVersion"] == version
    assert result["serverInfo"] == {"name": "life", "version": "2.0.0"}
    assert result["instructions"] == "Be nice."
    assert result["capabilities"] == {"logging": {}, "tools": {"listChanged": True}}


@pytest.mark.parametrize("version", ["1999-01-01", "2026-07-28", "2099-12-31"])
async def test_unknown_version_gets_the_latest_legacy(version: str) -> None:
    async with connect(_server()) as client:
        result = await client.initialize(version)
    assert result["protocolVersion"] == "2025-11-25"


async def test_requests_before_initialize_are_refused_but_ping_works() -> None:
    async with connect(_server()) as client:
        assert await client.request("ping") == {}
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/list")
        assert info.value.code == jsonrpc.INVALID_REQUEST
        assert "initialize" in info.value.message
        await client.initialize()
        assert [t["name"] for t in (await client.request("tools/list"))["tools"]] == ["echo"]


async def test_second_initialize_is_refused() -> None:
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.initialize()
    assert info.value.code == jsonrpc.INVALID_REQUEST


@pytest.mark.parametrize(
    "method", ["prompts/list", "resources/list", "resources/read", "completion/complete"]
)
async def test_absent_capability_is_method_not_found(method: str) -> None:
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request(method, {"uri": "x://y"})
    assert info.value.code == jsonrpc.METHOD_NOT_FOUND


@pytest.mark.parametrize("method", ["nope/nothing", "server/discover", "subscriptions/listen"])
async def test_unknown_methods(method: str) -> None:
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request(method)
    assert info.value.code == jsonrpc.METHOD_NOT_FOUND


async def test_params_must_be_an_object() -> None:
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/list", [1])
    assert info.value.code == jsonrpc.INVALID_PARAMS


async def test_ping_and_set_level_answer_exactly_empty() -> None:
    async with legacy(_server()) as client:
        assert await client.request("ping") == {}
        assert await client.request("logging/setLevel", {"level": "debug"}) == {}
        with pytest.raises(JSONRPCError) as info:
            await client.request("logging/setLevel", {"level": "loud"})
    assert info.value.code == jsonrpc.INVALID_PARAMS
