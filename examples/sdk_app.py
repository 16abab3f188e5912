"""An official-SDK (`mcp` 2.x) server, served on mcpframe without changing its code.

    python examples/sdk_app.py              # the engine drop-in: mcpframe does the wire, the SDK the rest
    python examples/sdk_app.py --transport  # only the stdio transport is swapped; the SDK serves
    mcpframe serve examples/sdk_app.py      # the command line finds `app` and uses the engine drop-in

The app below is plain SDK code: delete the `mcpframe` lines and `app.run()` serves it the SDK's way. Needs
the sdk extra (`pip install '.[sdk]'`).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

import mcpframe.compat

app = MCPServer("sdk-demo")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@app.tool()
async def countdown(n: int, ctx: Context) -> str:
    """Count down from n, reporting progress (the SDK's Context works unchanged on the engine)."""
    for done in range(n):
        await ctx.report_progress(done + 1, n)
    return "liftoff"


@app.resource("greeting://{name}")
def greeting(name: str) -> str:
    """A greeting for someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    if "--transport" in sys.argv:
        mcpframe.compat.install()  # the SDK's stdio_server is now mcpframe's
        app.run()
    else:
        mcpframe.compat.serve(app)  # instead of app.run()
