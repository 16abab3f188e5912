"""`mcpframe proxy --config FILE --listen URL`: the listen bridge in front of a gateway child per session,
reached with mcpframe's HTTP client. Needs the listen mode (`mcpframe.proxy.listen`)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

import anyio
import pytest

import mcpframe
from mcpframe.http import connect

pytest.importorskip("mcpframe.proxy.listen", reason="this tree has no listen mode (mcpframe.proxy.listen)")

pytestmark = pytest.mark.anyio

SOURCE = str(Path(mcpframe.__file__).resolve().parents[1])
SMALL = """
from mcpframe.server import Server

server = Server("s")


@server.tool
def echo(text: str) -> str:
    return text
"""
_URL = re.compile(rb"Streamable HTTP on (\S+)")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_gateway_over_streamable_http(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text(SMALL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))}
    serve = [sys.executable, "-m", "mcpframe", "serve"]
    config = {
        "mcpServers": {
            "one": {"command": serve[0], "args": [*serve[1:], str(tmp_path / "small.py")]},
            "two": {"command": serve[0], "args": [*serve[1:], str(tmp_path / "small.py")]},
        }
    }
    (tmp_path / "servers.json").write_text(json.dumps(config))
    command = [*serve[:3], "proxy", "--config", str(tmp_path / "servers.json")]
    command += ["--listen", "http://127.0.0.1:0/mcp"]
    async with await anyio.open_process(command, env=env) as child:
        assert child.stderr is not None
        try:
            printed = b""
            with anyio.fail_after(30):
                while not (found := _URL.search(printed)):
                    printed += await child.stderr.receive()
            async with connect(found.group(1).decode()) as client:
                tools = sorted(tool["name"] for tool in await client.list_tools())
                result = await client.call_tool("two__echo", {"text": "over http"})
        finally:
            child.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                await child.wait()
    assert tools == ["one__echo", "two__echo"]
    assert result["content"][0]["text"] == "over http"
