"""Call `examples/http_server.py` over Streamable HTTP with a bearer token.

    MCP_TOKEN=s3cret python examples/http_client.py http://127.0.0.1:8000/mcp

Without the right token the server answers 401 and the client raises; with it, the tool's answer prints.
"""

from __future__ import annotations

import os
import sys

import anyio

from mcpframe.http import connect
from mcpframe.session import JSONRPCError


async def main(url: str, token: str) -> None:
    async with connect(url, headers={"Authorization": f"Bearer {token}"}) as client:
        print(f"connected to {(client.server_info or {}).get('name')} ({client.protocol_version})")
        result = await client.call_tool("shout", {"text": "hello over http"})
        print("shout:", result["content"][0]["text"])


if __name__ == "__main__":
    endpoint = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"
    try:
        anyio.run(main, endpoint, os.environ.get("MCP_TOKEN", ""))
    except JSONRPCError as exc:  # e.g. the server's 401 when the token is wrong
        sys.exit(f"http_client.py: {endpoint}: {exc}")
