"""An official-SDK (mcp 2.3.0, MCPServer) server on stdio, for the client interoperability tests."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel

server = MCPServer("sdk-test-server", version="9.9.9", instructions="for tests")


class Person(BaseModel):
    name: str


def ask_name() -> Elicit[Person]:
    return Elicit("What is your name?", Person)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress for each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"counted {steps}"


@server.tool()
async def greet(person: Annotated[Person, Resolve(ask_name)]) -> str:
    """Greet whoever the client names (asks by elicitation)."""
    return f"Hello, {person.name}!"


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool fails")


@server.resource("test://static", mime_type="text/plain")
def static() -> str:
    """A static text resource."""
    return "static content"


@server.resource("test://items/{item}")
def item(item: str) -> str:
    """One item."""
    return f"item {item}"


@server.prompt()
def review(code: str) -> str:
    """Review some code."""
    return f"Please review: {code}"


if __name__ == "__main__":
    server.run()
