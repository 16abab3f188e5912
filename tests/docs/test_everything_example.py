"""`python examples/everything.py` serves the conformance fixture over stdio, as its docstring says.

It used to be importable only (`mcpframe serve examples.everything:server`): run as a script it exited at
once, silently, which reads like a broken example.
"""

from __future__ import annotations

import sys

import anyio
import pytest

from mcpframe.client import Client

from ._children import CHILD_TIMEOUT, ROOT, child_env

pytestmark = pytest.mark.anyio


async def test_everything_runs_as_a_script() -> None:
    script = str(ROOT / "examples" / "everything.py")
    with anyio.fail_after(CHILD_TIMEOUT):
        async with Client.stdio(sys.executable, [script], env=child_env()) as client:
            names = {tool["name"] for tool in await client.list_tools()}
            result = await client.call_tool("test_simple_text", {})
    assert "test_simple_text" in names
    assert result["content"][0]["type"] == "text"
