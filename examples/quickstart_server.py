"""The quickstart server: a tool, a resource template and a prompt, served over stdio.

Run it by itself (it speaks MCP on stdin/stdout, so it waits for a client):

    python examples/quickstart_server.py
    mcpframe serve examples/quickstart_server.py          # the same, through the command line

`examples/quickstart_client.py` starts it as a child process and calls its tool.
"""

from __future__ import annotations

from mcpframe.server import Context, Server

server = Server("quickstart", version="1.0.0", instructions="A calculator and a notebook.")

NOTES = {"shopping": "eggs, flour, milk", "todo": "write the docs"}


@server.tool
async def add(a: int, b: int, ctx: Context) -> int:
    """Add two numbers."""
    await ctx.info(f"adding {a} and {b}")  # to the client, unless its log level filters it out
    return a + b


@server.tool
def word_count(text: str) -> int:
    """Count the words in a text (a plain `def` runs on a worker thread, never on the event loop)."""
    return len(text.split())


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """One of the notes, by name."""
    return NOTES.get(name, "")


@server.prompt
def summarize(topic: str) -> str:
    """Ask the model for a short summary of a topic."""
    return f"Summarize what you know about {topic} in three sentences."


if __name__ == "__main__":
    server.run()
