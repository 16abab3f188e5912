"""An SDK ``MCPServer`` offering every kind of method, run over stdio by the compat tests and benchmarks.

``python sdk_server.py sdk`` serves on the SDK's own transport; ``python sdk_server.py dropin`` first calls
``mcpframe.compat.install()``. ``MCPFRAME_COMPAT_MAX_FRAME`` sets the drop-in's frame size limit.
"""

from __future__ import annotations

import os
import sys

import mcp.server.mcpserver.server as mcpserver_module
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import Completion, PromptReference, ResourceTemplateReference

import mcpframe.compat
from mcpframe.compat import mcp_sdk

server = MCPServer("compat-test-server")


@server.tool()
def echo(text: str) -> str:
    """Return ``text``."""
    return text


@server.tool(structured_output=False)
def blob(size: int) -> str:
    """Return a string of ``size`` ASCII characters."""
    return "x" * size


@server.tool()
def shout(text: str) -> str:
    """Print to stdout (must not reach the wire) and return ``text`` upper-cased."""
    print("stray output on stdout", text)
    sys.stdout.flush()
    os.write(1, b"stray bytes on fd 1\n")
    return text.upper()


@server.tool()
async def chatty(text: str, ctx: Context) -> str:
    """Send a log notification before answering."""
    await ctx.info(f"log: {text}")
    return text


@server.resource("res://static")
def static() -> str:
    """A fixed resource."""
    return "static content"


@server.resource("res://items/{name}")
def item(name: str) -> str:
    """A templated resource."""
    return f"item {name}"


@server.prompt()
def greet(name: str) -> str:
    """A prompt with one argument."""
    return f"Hello, {name}!"


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference, argument: object, context: object
) -> Completion | None:
    """Complete any argument from a fixed list."""
    return Completion(values=["alpha", "alpine"], total=2, has_more=False)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "sdk"
    if mode == "dropin":
        limit = os.environ.get("MCPFRAME_COMPAT_MAX_FRAME")
        mcpframe.compat.install(max_frame=int(limit) if limit else None)
        assert mcpserver_module.stdio_server is mcp_sdk.stdio_server
    server.run("stdio")


if __name__ == "__main__":
    main()
