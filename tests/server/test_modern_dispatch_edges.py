"""2026-07-28 dispatch at its edges: the per-request `_meta` read in one pass keeps every answer it gave.

The modern path reads the version, capabilities and log level straight from `_meta`, skips the round-trip
bookkeeping when a request carries none of it, and stamps results in place; these pin what that must not
change: odd versions refused with -32022, odd log levels taken as none, odd tool names refused as in the
handshake era, empty round-trip fields ignored, a tool's own `_meta` kept beside the server's stamp, and
progress tokens still honoured (or ignored) per request.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpframe import jsonrpc
from mcpframe.protocol import (
    CLIENT_CAPABILITIES_KEY,
    LOG_LEVEL_KEY,
    PROGRESS_TOKEN,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUPPORTED_VERSIONS,
)
from mcpframe.server import Context, Server, ToolResult
from mcpframe.session import JSONRPCError

from ._driver import connect, legacy

pytestmark = pytest.mark.anyio

INFO = {"name": "edges", "version": "1.2.3"}


def _server() -> Server:
    server = Server("edges", version="1.2.3")

    @server.tool
    async def shout(text: str) -> str:
        """Upper case."""
        return text.upper()

    @server.tool
    async def tagged():  # type: ignore[no-untyped-def]  # no return annotation: no outputSchema
        """A result with a `_meta` of its own (one key the server's stamp replaces)."""
        meta = {"app/tag": 7, SERVER_INFO_KEY: {"name": "forged"}}
        return ToolResult(content=[{"type": "text", "text": "t"}], meta=meta)

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Logs at warning."""
        await ctx.warning("w")
        return "ok"

    @server.tool
    async def counting(ctx: Context) -> str:
        """Reports progress once."""
        await ctx.report_progress(1, 2)
        return "counted"

    return server


def _meta(**extra: Any) -> dict[str, Any]:
    return {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}, **extra}


@pytest.mark.parametrize("version", [["2026-07-28"], {"v": 1}, 20260728, "2026-07-29"])
async def test_a_version_the_server_does_not_speak_is_32022_whatever_its_type(version: Any) -> None:
    async with connect(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/list", {"_meta": _meta(**{PROTOCOL_VERSION_KEY: version})})
    assert info.value.code == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION
    assert info.value.data == {"supported": list(SUPPORTED_VERSIONS), "requested": version}


async def test_a_null_version_leaves_the_request_to_the_handshake_era() -> None:
    async with connect(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/list", {"_meta": {PROTOCOL_VERSION_KEY: None}})
    assert info.value.code == jsonrpc.INVALID_REQUEST  # no initialize yet: not taken as 2026-07-28
    assert "initialize" in info.value.message


@pytest.mark.parametrize("level", [3, ["warning"], {"level": "warning"}, "loud", None])
async def test_a_log_level_that_names_no_level_sends_no_log(level: Any) -> None:
    async with connect(_server()) as client:
        answer = await client.request(
            "tools/call", {"name": "chatty", "_meta": _meta(**{LOG_LEVEL_KEY: level})}
        )
        assert answer["content"] == [{"type": "text", "text": "ok"}]
        await client.request("tools/call", {"name": "chatty", "_meta": _meta(**{LOG_LEVEL_KEY: "warning"})})
        notes = await client.wait_for("notifications/message")
    assert [note["data"] for note in notes] == ["w"]  # the second call's only


@pytest.mark.parametrize("name", [7, None, ["shout"], {"n": "shout"}, True])
async def test_a_tool_name_that_is_not_a_string_is_refused_as_in_the_handshake_era(name: Any) -> None:
    params = {"name": name, "arguments": {"text": "a"}}
    async with connect(_server()) as client:
        with pytest.raises(JSONRPCError) as modern:
            await client.modern("tools/call", params)
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as handshake:
            await client.request("tools/call", params)
    assert (modern.value.code, modern.value.message) == (handshake.value.code, handshake.value.message)


async def test_null_round_trip_fields_are_taken_as_absent() -> None:
    params = {"name": "shout", "arguments": {"text": "a"}, "requestState": None, "inputResponses": None}
    async with connect(_server()) as client:
        answer = await client.modern("tools/call", params)
    assert answer["content"] == [{"type": "text", "text": "A"}]
    assert answer["resultType"] == "complete"


@pytest.mark.parametrize("given", [[], "x", 1])
async def test_input_responses_that_are_not_an_object_are_32602(given: Any) -> None:
    async with connect(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.modern(
                "tools/call", {"name": "shout", "arguments": {"text": "a"}, "inputResponses": given}
            )
    assert info.value.code == jsonrpc.INVALID_PARAMS
    assert info.value.message == 'Invalid params: "inputResponses" must be an object'


async def test_a_request_state_on_a_plain_call_is_checked() -> None:
    async with connect(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.modern(
                "tools/call", {"name": "shout", "arguments": {"text": "a"}, "requestState": "zz"}
            )
    assert info.value.code == jsonrpc.INVALID_PARAMS
    assert "requestState" in info.value.message


async def test_a_results_own_meta_is_kept_beside_the_servers_stamp() -> None:
    async with connect(_server()) as client:
        first = await client.modern("tools/call", {"name": "tagged"})
        plain = await client.modern("tools/call", {"name": "shout", "arguments": {"text": "b"}})
    assert first["_meta"] == {"app/tag": 7, SERVER_INFO_KEY: INFO}
    assert plain["_meta"] == {SERVER_INFO_KEY: INFO}


async def test_progress_tokens_per_request_are_honoured_and_odd_ones_ignored() -> None:
    async with connect(_server()) as client:
        await client.request("tools/call", {"name": "counting", "_meta": _meta()})
        await client.request("tools/call", {"name": "counting", "_meta": _meta(**{PROGRESS_TOKEN: True})})
        await client.request("tools/call", {"name": "counting", "_meta": _meta(**{PROGRESS_TOKEN: "tok"})})
        notes = await client.wait_for("notifications/progress")
    assert [(note[PROGRESS_TOKEN], note["progress"]) for note in notes] == [("tok", 1)]
