"""`mcpframe proxy --config`: the config's rules and errors (exit 2), the naming and cursor rules, and the
command run as a child in front of a server that starts and one that does not."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcpframe
from mcpframe.cli.proxy import proxy_main
from mcpframe.client import Client
from mcpframe.proxy.gateway_config import ConfigError, parse_config
from mcpframe.proxy.gateway_routes import decode_cursor, encode_cursor, split_name, template_pattern
from mcpframe.session import JSONRPCError

SOURCE = str(Path(mcpframe.__file__).resolve().parents[1])
SMALL = """
from mcpframe.server import Server

server = Server("s")


@server.tool
def echo(text: str) -> str:
    return text


@server.tool
def pid() -> int:
    import os

    return os.getpid()
"""


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("not json", "not JSON"),
        ({"servers": {}}, '"mcpServers"'),
        ({"mcpServers": {"a b": {"command": "x"}}}, "mcpServers.a b: bad server name"),
        ({"mcpServers": {"a__b": {"command": "x"}}}, "bad server name 'a__b'"),
        ({"mcpServers": {"a": {"command": 3}}}, "mcpServers.a.command"),
        ({"mcpServers": {"a": {"command": "x", "args": "-v"}}}, "mcpServers.a.args: expected a list"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, "mcpServers.a.env"),
        ({"mcpServers": {"a": {"url": "ftp://h"}}}, "mcpServers.a.url"),
        ({"mcpServers": {"a": {"url": "http://h", "type": "websocket"}}}, "mcpServers.a.type"),
        ({"mcpServers": {"a": {"args": []}}}, 'mcpServers.a: no "command"'),
        ({"mcpServers": {"a": {"command": "x", "disabled": True}}}, "names no (enabled) server"),
    ],
)
def test_bad_config_exits_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: Any, named: str
) -> None:
    path = tmp_path / "servers.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    assert proxy_main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert named in err
    assert str(path) in err


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert proxy_main(["--config", str(tmp_path / "nope.json")]) == 2
    assert "cannot read the config" in capsys.readouterr().err


def test_config_shapes() -> None:
    specs = parse_config(
        {
            "mcpServers": {
                "local": {"command": "python", "args": ["s.py"], "env": {"K": "v"}, "cwd": "/tmp"},
                "remote": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer t"}},
                "legacy": {"type": "sse", "url": "http://h/sse"},
                "typed": {"transport": "http", "url": "http://h/mcp"},
                "off": {"command": "x", "disabled": True},
            }
        }
    )
    assert [(s.name, s.kind) for s in specs] == [
        ("local", "stdio"),
        ("remote", "auto"),
        ("legacy", "sse"),
        ("typed", "streamable-http"),
    ]
    assert specs[0].args == ("s.py",)
    assert specs[0].env == {"K": "v"}
    assert specs[1].headers == {"Authorization": "Bearer t"}
    with pytest.raises(ConfigError, match="not both"):
        parse_config({"mcpServers": {"a": {"command": "x", "url": "http://h"}}})


def test_names_cursors_templates() -> None:
    assert split_name("my-server__do__it", "tool") == ("my-server", "do__it")
    assert split_name("a_b__c", "tool") == ("a_b", "c")  # a name has no '__' and no '_' at its end
    with pytest.raises(JSONRPCError) as caught:
        split_name("plain", "tool")
    assert caught.value.code == -32602
    assert decode_cursor(encode_cursor("s", "abc")) == ("s", "abc")
    assert decode_cursor(encode_cursor("s", None)) == ("s", None)
    for bad in ("", "%%%", 3, encode_cursor("s", 1)[:-2] + "!!"):
        with pytest.raises(JSONRPCError):
            decode_cursor(bad)
    pattern = template_pattern("test://template/{id}/data")
    assert pattern.fullmatch("test://template/7/data")
    assert not pattern.fullmatch("test://template/7/8/data")
    assert template_pattern("file:///{+path}").fullmatch("file:///a/b/c")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_command_with_a_server_that_does_not_start(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text(SMALL)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))}
    serve = {"command": sys.executable, "args": ["-m", "mcpframe", "serve", str(tmp_path / "small.py")]}
    config = {"mcpServers": {"gone": {"command": str(tmp_path / "missing")}, "small": {**serve, "env": env}}}
    (tmp_path / "servers.json").write_text(json.dumps(config))
    args = ["-m", "mcpframe", "proxy", "--config", str(tmp_path / "servers.json")]
    with (tmp_path / "stderr").open("w+b") as stderr, anyio.fail_after(60):
        async with Client.stdio(sys.executable, args, env=env, stderr=stderr) as client:
            tools = [tool["name"] for tool in await client.list_tools()]
            result = await client.call_tool("small__echo", {"text": "through"})
        stderr.seek(0)
        err = stderr.read().decode()
    assert tools == ["small__echo", "small__pid"]
    assert result["content"][0]["text"] == "through"
    assert "server 'gone' did not start: command not found" in err


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


@pytest.mark.anyio
async def test_sigterm_stops_the_servers(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text(SMALL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))}
    serve = {"command": sys.executable, "args": ["-m", "mcpframe", "serve", str(tmp_path / "small.py")]}
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {"small": serve}}))
    command = [sys.executable, "-m", "mcpframe", "proxy", "--config", str(tmp_path / "servers.json")]
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    async with await anyio.open_process(command, env=env) as gateway:
        assert gateway.stdin is not None
        assert gateway.stdout is not None
        with anyio.fail_after(60):
            await gateway.stdin.send(_line({"id": 1, "method": "initialize", "params": init}))
            call = {"name": "small__pid", "arguments": {}}
            await gateway.stdin.send(_line({"id": 2, "method": "tools/call", "params": call}))
            seen = b""
            while seen.count(b"\n") < 2:
                seen += await gateway.stdout.receive()
            answer = json.loads(seen.splitlines()[1])
            pid = int(answer["result"]["content"][0]["text"])
            os.kill(pid, 0)  # the server runs
            gateway.terminate()
            status = await gateway.wait()
    assert status == 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped and reaped by the gateway before it ended


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_official_sdk_client_through_the_gateway(tmp_path: Path) -> None:
    from mcp import ClientSession, types  # noqa: PLC0415 - the official SDK, a test dependency
    from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: PLC0415

    everything = str(Path(__file__).resolve().parents[2] / "examples" / "everything.py")
    (tmp_path / "small.py").write_text(SMALL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))}
    serve = [sys.executable, "-m", "mcpframe", "serve"]
    config = {
        "mcpServers": {
            "every": {"command": serve[0], "args": [*serve[1:], everything]},
            "small": {"command": serve[0], "args": [*serve[1:], str(tmp_path / "small.py")]},
        }
    }
    (tmp_path / "servers.json").write_text(json.dumps(config))
    args = ["-m", "mcpframe", "proxy", "--config", str(tmp_path / "servers.json")]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    progress: list[float] = []

    async def on_sample(context: Any, asked: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled!"), model="sdk"
        )

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    with anyio.fail_after(60):
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, sampling_callback=on_sample) as client,
        ):
            init = await client.initialize()
            tools = {tool.name for tool in (await client.list_tools()).tools}
            echoed = await client.call_tool("small__echo", {"text": "sdk"})
            sampled = await client.call_tool("every__test_sampling", {"prompt": "hi"})
            await client.call_tool("every__test_tool_with_progress", {}, progress_callback=on_progress)
            note = await client.read_resource("test://static-text")
    assert init.server_info.name == "mcpframe-gateway"
    assert {"every__test_simple_text", "small__echo", "small__pid"} <= tools
    assert echoed.content[0].text == "sdk"  # type: ignore[union-attr]
    assert sampled.content[0].text == "LLM response: sampled!"  # type: ignore[union-attr]
    assert progress == [0, 50, 100]
    assert note.contents[0].text.startswith("This is the content")  # type: ignore[union-attr]
