"""A FastMCP server for the compat tests: ``python fastmcp_server.py sdk|dropin`` (see sdk_server.py)."""

from __future__ import annotations

import sys

import fastmcp.server.mixins.transport as fastmcp_transport
from fastmcp import FastMCP

import mcpframe.compat
from mcpframe.compat import mcp_sdk

server = FastMCP("compat-fastmcp-server")


@server.tool
def echo(text: str) -> str:
    """Return ``text``."""
    return text


@server.tool(output_schema=None)
def blob(size: int) -> str:
    """Return a string of ``size`` ASCII characters."""
    return "x" * size


@server.resource("res://static")
def static() -> str:
    """A fixed resource."""
    return "static content"


@server.prompt
def greet(name: str) -> str:
    """A prompt with one argument."""
    return f"Hello, {name}!"


def main() -> None:
    if sys.argv[1] == "dropin":
        mcpframe.compat.install()
        assert fastmcp_transport.stdio_server is mcp_sdk.stdio_server
    server.run("stdio", show_banner=False)


if __name__ == "__main__":
    main()
