"""The engine's quick wire form of primitive tool results (``_shapes``) against the SDK kernel's own.

Every call goes through the kernel (``ServerRunner.on_request``) and through the engine's short way at every
handshake revision; the answers must be the same JSON text, key order included. Values are handed to the
tools in process, so they include what JSON arguments cannot carry (non-finite floats, a ``str`` subclass).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest

pytest.importorskip("mcp")

from mcp.server.connection import Connection
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
)
from pydantic import Field
from tests.compat._support import needs_private_mcp
from tests.compat.test_engine_fast import CALLS as FAST_CALLS
from tests.compat.test_engine_fast import VERSIONS, Dispatch, answer, runner_for
from tests.compat.test_engine_fast import build_app as build_fast_app

from mcpframe.compat.engine import _fast, _shapes
from mcpframe.compat.engine._server import _Kernel

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ENVELOPE = {
    PROTOCOL_VERSION_META_KEY: MODERN,
    CLIENT_INFO_META_KEY: {"name": "shapes", "version": "1"},
    CLIENT_CAPABILITIES_META_KEY: {},
}


class Label(str):
    """A ``str`` subclass: the SDK's validation turns it into a plain ``str`` in the structured copy."""


def build_app() -> MCPServer:
    app = MCPServer("shapes-test")

    @app.tool()
    def as_str(value: Any) -> str:
        return value  # type: ignore[no-any-return]

    @app.tool()
    def as_int(value: Any) -> int:
        return value  # type: ignore[no-any-return]

    @app.tool()
    async def as_float(value: Any) -> float:
        return value  # type: ignore[no-any-return]

    @app.tool()
    def as_bool(value: Any) -> bool:
        return value  # type: ignore[no-any-return]

    @app.tool()
    def loose(value: Any):  # type: ignore[no-untyped-def]  # no annotation: no structured output
        return value

    @app.tool(structured_output=False)
    def unstructured(value: Any) -> str:
        return value  # type: ignore[no-any-return]

    @app.tool()
    def bounded(value: Any) -> Annotated[str, Field(max_length=3)]:
        return value  # type: ignore[no-any-return]

    @app.tool()
    def optional(value: Any) -> str | None:
        return value  # type: ignore[no-any-return]

    return app


VALUES: list[Any] = [
    "",
    "h\u00e9llo \U0001f600",
    "\ud800 lone surrogate",
    "x" * 300,
    0,
    -1,
    2**70,
    True,
    False,
    1.5,
    -0.0,
    1e300,
    5e-324,
    float("inf"),
    float("-inf"),
    float("nan"),
    Label("labelled"),
    None,
    [1, "two"],
]
TOOLS = ["as_str", "as_int", "as_float", "as_bool", "loose", "unstructured", "bounded", "optional"]


def wire(answer: Any) -> str:
    return json.dumps(answer)


@needs_private_mcp
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("tool", TOOLS)
async def test_quick_results_are_the_kernels_to_the_byte(version: str, tool: str) -> None:
    app = build_app()
    runner = runner_for(app, version)
    for value in VALUES:
        params = {"name": tool, "arguments": {"value": value}}
        assert _fast.eligible(runner, app, params)
        expected = await answer(runner.on_request(Dispatch(), "tools/call", dict(params)))  # type: ignore[arg-type]
        got = await answer(_fast.plain_tool_call(runner, app, Dispatch, dict(params)))
        assert wire(got) == wire(expected), (tool, value)


QUICK = [
    ("as_str", "h\u00e9llo"),
    ("as_str", ""),
    ("as_int", 2**70),
    ("as_float", 1.5),
    ("as_bool", False),
    ("loose", "x"),
    ("loose", 3),
    ("unstructured", 3.25),
]
SLOW = [
    ("as_float", 3),  # the SDK's validation makes the structured copy 3.0
    ("as_float", float("nan")),
    ("as_int", True),
    ("as_str", Label("x")),
    ("bounded", "ok"),
    ("optional", "x"),
    ("as_str", None),
    ("loose", [1]),
]


@needs_private_mcp
@pytest.mark.parametrize(("tool", "value"), QUICK + SLOW)
async def test_quick_way_is_taken_exactly_where_it_claims(tool: str, value: Any) -> None:
    app = build_app()
    runner = runner_for(app, "2025-06-18")
    meta = app._tool_manager.get_tool(tool).fn_metadata  # type: ignore[union-attr]
    quick = _shapes.quick_result(meta, value, "2025-06-18", runner._serialize)
    assert (quick is not None) == ((tool, value) in QUICK)


class OddKernel:
    """A serializer whose answers carry a key the quick way does not make."""

    def _serialize(self, method: str, version: str, result: Any) -> dict[str, Any]:
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return {**dumped, "extra": 1}

    def _stamp_server_info(self, version: str, result: dict[str, Any]) -> dict[str, Any]:
        return result


@pytest.mark.parametrize("version", [*VERSIONS, MODERN])
def test_an_unexpected_probe_answer_turns_the_quick_way_off(version: str) -> None:
    assert _shapes._learn(OddKernel(), version) is None
    learnt = _shapes._learn(runner_for(build_app(), version), version)
    assert learnt is not None
    assert {"content", "isError", "structuredContent"} <= set(learnt.structured)
    assert learnt.result_type == (version == MODERN)


async def kernel_modern(app: MCPServer, params: dict[str, Any]) -> Any:
    """What the SDK's own 2026-07-28 entry answers (a born-ready connection from the envelope)."""
    meta = params["_meta"]
    connection = Connection.from_envelope(
        MODERN, meta.get(CLIENT_INFO_META_KEY), meta.get(CLIENT_CAPABILITIES_META_KEY)
    )
    runner = ServerRunner(_Kernel(app._lowlevel_server), connection, None)  # type: ignore[arg-type]
    try:
        return await answer(runner.on_request(Dispatch(), "tools/call", dict(params)))  # type: ignore[arg-type]
    finally:
        await aclose_shielded(connection)


async def fast_modern(app: MCPServer, params: dict[str, Any]) -> Any:
    shaper = ServerRunner(_Kernel(app._lowlevel_server), Connection.from_envelope(MODERN, None, None), None)  # type: ignore[arg-type]

    async def sealer(dumped: dict[str, Any]) -> Any:
        raise AssertionError("no tool here asks for input")

    assert _fast.modern_eligible(_Kernel(app._lowlevel_server), app, params)
    return await answer(_fast.short_tool_call(shaper, app, MODERN, dict(params), sealer))


@needs_private_mcp
@pytest.mark.parametrize("tool", TOOLS)
async def test_modern_quick_results_are_the_kernels_to_the_byte(tool: str) -> None:
    app = build_app()
    for value in VALUES:
        params = {"name": tool, "arguments": {"value": value}, "_meta": dict(ENVELOPE)}
        assert wire(await fast_modern(app, params)) == wire(await kernel_modern(app, params)), (tool, value)


@needs_private_mcp
@pytest.mark.parametrize("params", FAST_CALLS, ids=lambda p: f"{p['name']}-{p.get('arguments')}")
async def test_modern_short_way_answers_as_the_kernel(params: dict[str, Any]) -> None:
    """Every call of the handshake-era table (failures and protocol errors included), at 2026-07-28."""
    app = build_fast_app()
    modern = {**params, "_meta": dict(ENVELOPE)}
    if params["name"] == "no-such-tool":  # the kernel's own unknown-tool answer: not on the short way
        assert not _fast.modern_eligible(_Kernel(app._lowlevel_server), app, modern)
        return
    assert wire(await fast_modern(app, modern)) == wire(await kernel_modern(app, modern))


@needs_private_mcp
def test_modern_eligibility_refuses_what_needs_the_kernel() -> None:
    app = build_fast_app()
    plain = {"name": "echo", "arguments": {"text": "x"}}
    cases = {
        "plain": {**plain, "_meta": dict(ENVELOPE)},
        "no envelope": plain,
        "progress token": {**plain, "_meta": {**ENVELOPE, "progressToken": 1}},
        "log level": {**plain, "_meta": {**ENVELOPE, "io.modelcontextprotocol/logLevel": "debug"}},
        "request state": {**plain, "_meta": dict(ENVELOPE), "requestState": "s"},
        "context tool": {"name": "with_context", "arguments": {}, "_meta": dict(ENVELOPE)},
        "unknown tool": {"name": "nope", "_meta": dict(ENVELOPE)},
        "arguments not an object": {"name": "echo", "arguments": [1], "_meta": dict(ENVELOPE)},
    }
    assert {
        name: _fast.modern_eligible(_Kernel(app._lowlevel_server), app, params)
        for name, params in cases.items()
    } == {
        "plain": True,
        "no envelope": False,
        "progress token": False,
        "log level": False,
        "request state": False,
        "context tool": False,
        "unknown tool": False,
        "arguments not an object": False,
    }
    app._lowlevel_server.middleware.append(lambda ctx, call_next: call_next(ctx))
    assert not _fast.modern_eligible(_Kernel(app._lowlevel_server), app, cases["plain"])


@needs_private_mcp
async def test_modern_input_required_is_sealed_by_the_requests_own_kernel() -> None:
    app = build_fast_app()

    @app.tool()
    def asks() -> InputRequiredResult:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        ask = ElicitRequest(params=ElicitRequestFormParams(message="Go?", requested_schema=schema))
        return InputRequiredResult(input_requests={"ok": ask}, request_state="plain-state")

    params = {"name": "asks", "_meta": dict(ENVELOPE)}
    shaper = ServerRunner(_Kernel(app._lowlevel_server), Connection.from_envelope(MODERN, None, None), None)  # type: ignore[arg-type]
    sealed_by: list[ServerRunner[Any]] = []

    async def sealer(dumped: dict[str, Any]) -> Any:
        meta = params["_meta"]
        connection = Connection.from_envelope(
            MODERN, meta[CLIENT_INFO_META_KEY], meta[CLIENT_CAPABILITIES_META_KEY]
        )
        runner = ServerRunner(_Kernel(app._lowlevel_server), connection, None)  # type: ignore[arg-type]
        sealed_by.append(runner)
        try:
            return _fast.seal(runner, Dispatch(), params, MODERN, dumped)
        finally:
            await aclose_shielded(connection)

    assert _fast.modern_eligible(_Kernel(app._lowlevel_server), app, params)
    got = await _fast.short_tool_call(shaper, app, MODERN, dict(params), sealer)
    expected = await kernel_modern(app, params)
    assert len(sealed_by) == 1
    assert got["resultType"] == expected["resultType"] == "input_required"
    assert got["requestState"] != "plain-state" != expected["requestState"]  # sealed, as the kernel seals it
    assert {k: v for k, v in got.items() if k != "requestState"} == {
        k: v for k, v in expected.items() if k != "requestState"
    }


def test_the_wrapper_answer_follows_the_metadata_it_was_taken_from() -> None:
    app = build_app()
    runner = runner_for(app, "2025-06-18")
    meta = app._tool_manager.get_tool("as_str").fn_metadata  # type: ignore[union-attr]
    assert _shapes.quick_result(meta, "x", "2025-06-18", runner) is not None
    meta.wrap_output = False  # a run-time change the cached answer must not hide
    assert _shapes.quick_result(meta, "x", "2025-06-18", runner) is None
