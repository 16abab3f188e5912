"""A tool result JSON cannot carry is the tool's error (`isError`), said plainly, not a -32603 for the call.

Found by the hostile-input fuzzer (`tests/fuzz`): `add` called with a 4,300-digit integer (the most the wire
accepts) returns one of 4,301 digits, which Python refuses to turn into text; the call failed with
"Internal error (ValueError)" and a traceback in the server's log.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpframe.client import Client
from mcpframe.server import Server, ToolResult

pytestmark = pytest.mark.anyio

BIG = 10**4300  # 4,301 digits: past `sys.get_int_max_str_digits()`
server = Server("hostile-results")


@server.tool
def plain(n: int):  # no return annotation: no outputSchema, content only
    """Return n plus one (no return annotation)."""
    return n + 1


@server.tool
def typed(n: int) -> int:
    """Return n plus one (an outputSchema from the annotation)."""
    return n + 1


@server.tool
def wrapped(n: int):  # a ToolResult (unannotated: no outputSchema)
    """Return n plus one as a ToolResult's content."""
    return ToolResult(content=[n + 1])


@pytest.mark.parametrize("name", ["plain", "typed", "wrapped"])
async def test_a_result_json_cannot_carry_is_the_tools_error(name: str) -> None:
    with anyio.fail_after(30):
        async with Client(server) as client:
            result: dict[str, Any] = await client.call_tool(name, {"n": BIG - 1})
            assert result["isError"] is True
            text = result["content"][0]["text"]
            assert text.startswith(f"Error executing tool {name}: its result cannot be encoded as JSON (")
            assert "4300" in text
            assert (await client.call_tool(name, {"n": 1}))["content"][0]["text"] == "2"
