"""The quickstart client: start `quickstart_server.py` as a child process and use what it offers.

    python examples/quickstart_client.py

It prints the tools, one tool call's answer, a resource and a prompt.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from mcpframe.client import Client

SERVER = Path(__file__).with_name("quickstart_server.py")


async def main() -> None:
    # the server is this same Python running the server file; its stdio is the connection
    async with Client.stdio(sys.executable, [str(SERVER)]) as client:
        info = client.server_info or {}
        print(f"connected to {info.get('name')} {info.get('version')} ({client.protocol_version})")
        tools = await client.list_tools()
        print("tools:", ", ".join(tool["name"] for tool in tools))

        result = await client.call_tool("add", {"a": 2, "b": 3})
        print("add(2, 3) =", result["content"][0]["text"])

        result = await client.call_tool("add", {"a": "two", "b": 3})  # a wrong argument: a tool error
        print("add('two', 3) is an error:", result.get("isError", False))

        contents = await client.read_resource("notes://shopping")
        print("notes://shopping:", contents[0]["text"])

        prompt = await client.get_prompt("summarize", {"topic": "MCP"})
        print("prompt:", prompt["messages"][0]["content"]["text"])


if __name__ == "__main__":
    anyio.run(main)
