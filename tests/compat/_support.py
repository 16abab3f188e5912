"""Helpers shared by the compat tests and benchmarks: how to start the test servers, what to ask them."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import PromptReference, ResourceTemplateReference

import mcpframe
from mcpframe._unstable import mcp_sdk as unstable_sdk

HERE = Path(__file__).resolve().parent
SDK_SERVER = HERE / "sdk_server.py"
FASTMCP_SERVER = HERE / "fastmcp_server.py"
MiB = 1024 * 1024

needs_private_mcp = pytest.mark.skipif(
    not unstable_sdk.CHOICE.private,
    reason=f"tests a path built on mcp's private names, off here: {unstable_sdk.CHOICE.reason}",
)
"""For a test of the engine's short way, sync pool, OpenTelemetry filter, subscription bridge or full start-up
report: off on the public fallback (``mcpframe._unstable.mcp_sdk``), where every request takes the SDK's
kernel instead (the rest of the suite checks that path's answers)."""
needs_private_fastmcp = pytest.mark.skipif(
    not unstable_sdk.FASTMCP_CHOICE.private,
    reason=f"tests a path built on fastmcp's private names, off here: {unstable_sdk.FASTMCP_CHOICE.reason}",
)
"""For a test of the engine serving a FastMCP app (its pool swap included)."""


def child_env(**extra: str) -> dict[str, str]:
    """Environment for a test server: finds this mcpframe tree, keeps the selected core backend."""
    package_root = str(Path(mcpframe.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "MCPFRAME_BACKEND": os.environ.get("MCPFRAME_BACKEND", "auto")}
    return env | extra


def server_params(mode: str, script: Path = SDK_SERVER, **extra_env: str) -> StdioServerParameters:
    """Run ``script`` with ``mode`` (``sdk``: the SDK's own stdio transport, ``dropin``: mcpframe's)."""
    return StdioServerParameters(command=sys.executable, args=[str(script), mode], env=child_env(**extra_env))


def text_of(result: Any) -> str:
    """The text of the first content block of a tool or prompt result."""
    block = result.content[0] if hasattr(result, "content") else result.messages[0].content
    text: str = block.text
    return text


async def exercise(session: ClientSession) -> dict[str, Any]:
    """Every method the test server offers; the results as plain data, for comparing two transports."""
    out: dict[str, Any] = {"initialize": (await session.initialize()).model_dump()}
    out["ping"] = (await session.send_ping()).model_dump()
    out["tools"] = (await session.list_tools()).model_dump()
    out["echo"] = (await session.call_tool("echo", {"text": "h\u00e9llo \U0001f389\n"})).model_dump()
    out["shout"] = (await session.call_tool("shout", {"text": "quiet"})).model_dump()
    out["chatty"] = (await session.call_tool("chatty", {"text": "note"})).model_dump()
    out["missing_tool"] = (await session.call_tool("no-such-tool", {})).model_dump()
    out["resources"] = (await session.list_resources()).model_dump()
    out["static"] = (await session.read_resource("res://static")).model_dump()
    out["templates"] = (await session.list_resource_templates()).model_dump()
    out["item"] = (await session.read_resource("res://items/apple")).model_dump()
    out["prompts"] = (await session.list_prompts()).model_dump()
    out["greet"] = (await session.get_prompt("greet", {"name": "Ada"})).model_dump()
    ref = PromptReference(type="ref/prompt", name="greet")
    out["complete_prompt"] = (await session.complete(ref, {"name": "name", "value": "al"})).model_dump()
    template = ResourceTemplateReference(type="ref/resource", uri="res://items/{name}")
    out["complete_template"] = (await session.complete(template, {"name": "name", "value": "a"})).model_dump()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging/setLevel, still served
            out["set_level"] = (await session.set_logging_level("debug")).model_dump()
    except MCPError as exc:
        out["set_level"] = {"error": exc.error.code}
    return out
