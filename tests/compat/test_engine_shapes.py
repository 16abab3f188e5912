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

from mcp.server.mcpserver import MCPServer
from pydantic import Field
from tests.compat.test_engine_fast import VERSIONS, Dispatch, answer, runner_for

from mcpframe.compat.engine import _fast, _shapes

pytestmark = pytest.mark.anyio


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


@pytest.mark.parametrize(("tool", "value"), QUICK + SLOW)
async def test_quick_way_is_taken_exactly_where_it_claims(tool: str, value: Any) -> None:
    app = build_app()
    runner = runner_for(app, "2025-06-18")
    meta = app._tool_manager.get_tool(tool).fn_metadata  # type: ignore[union-attr]
    quick = _shapes.quick_result(meta, value, "2025-06-18", runner._serialize)
    assert (quick is not None) == ((tool, value) in QUICK)


def test_an_unexpected_probe_answer_turns_the_quick_way_off() -> None:
    def odd(method: str, version: str, result: Any) -> dict[str, Any]:
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return {**dumped, "extra": 1}

    assert _shapes._learn(odd, "2025-06-18") is None
    app = build_app()
    learnt = _shapes._learn(runner_for(app, "2025-06-18")._serialize, "2025-06-18")
    assert learnt is not None
    assert set(learnt.structured) == {"content", "isError", "structuredContent"}
