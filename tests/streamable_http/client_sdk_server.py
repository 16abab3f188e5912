"""The official SDK's (mcp 2.3.0) Streamable HTTP server on 127.0.0.1, for the HTTP client tests and bench.

`python client_sdk_server.py [--stateless] [--json]` binds a free port, prints `URL <url>` on stdout, serves
until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("sdk-http-server", version="2.3.0")


class Person(BaseModel):
    name: str


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress for each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"counted {steps}"


@server.tool()
async def greet(ctx: Context) -> str:
    """Ask the client for a name (elicitation), then greet it."""
    answer = await ctx.elicit("What is your name?", Person)
    if answer.action != "accept":
        return f"no name ({answer.action})"
    return f"Hello, {answer.data.name}!"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    app = server.streamable_http_app(stateless_http=args.stateless, json_response=args.json)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"URL http://127.0.0.1:{port}/mcp", flush=True)
    sys.stdout.flush()
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
