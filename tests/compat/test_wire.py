"""The drop-in transports at the wire: bad and oversize frames in-band, stdout protection, rendezvous."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest, JSONRPCResponse

from mcpframe.compat import mcp_sdk
from mcpframe.compat._messages import InvalidFrameError

from ._support import HERE, child_env

pytestmark = pytest.mark.anyio

WIRE_PEER = str(HERE / "wire_peer.py")
LIMIT = 1024
OVERSIZE_MESSAGE = f"Invalid Request: frame exceeds the maximum size of {LIMIT} bytes"


async def reflect(chunks: list[bytes]) -> tuple[list[dict[str, Any]], bytes, bytes]:
    """Feed ``chunks`` to the drop-in server; return what it reported, its raw stdout and stderr."""
    env = child_env(MCPFRAME_COMPAT_MAX_FRAME=str(LIMIT))
    with anyio.fail_after(30):
        async with await anyio.open_process(
            [sys.executable, WIRE_PEER, "reflect"], env=env, stderr=subprocess.PIPE
        ) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            assert process.stderr is not None
            for chunk in chunks:
                await process.stdin.send(chunk)
            await process.stdin.aclose()
            out = b"".join([chunk async for chunk in process.stdout])
            err = b"".join([chunk async for chunk in process.stderr])
            assert await process.wait() == 0
    reports = [json.loads(line) for line in out.splitlines()]
    assert all(r["method"] == "test/item" for r in reports)
    return [r["params"] for r in reports], out, err


async def test_server_delivers_bad_frames_in_band_and_survives() -> None:
    oversize = b'{"jsonrpc":"2.0","method":"big","params":{"p":"' + b"a" * (2 * LIMIT) + b'"}}\n'
    chunks = [
        b'{"jsonrpc":"2.0","id":1,"method":"first"}\n',
        b"not json at all\n",
        oversize[:700],
        oversize[700:],
        b'[{"jsonrpc":"2.0","id":2,"method":"batched"}]\n',
        b'{"jsonrpc":"2.0","id":3,"method":"x","params":[1]}\n',
        b"\n   \n",
        b'{"jsonrpc":"2.0","method":"split","par',
        b'ams":{"k":1}}\r\n{"jsonrpc":"2.0","id":"last","method":"end"}',
    ]
    reports, out, err = await reflect(chunks)
    assert reports[0] == {"class": "JSONRPCRequest", "dump": {"jsonrpc": "2.0", "id": 1, "method": "first"}}
    assert reports[1]["exception"] == "InvalidFrameError"
    assert reports[1]["code"] == -32700
    assert reports[2] == {"exception": "InvalidFrameError", "code": -32600, "text": OVERSIZE_MESSAGE}
    assert reports[3]["exception"] == "InvalidFrameError"
    assert reports[3]["text"] == "Invalid Request: batches are not supported"
    assert reports[4]["exception"] == "ValidationError"  # what the SDK's own validator says about it
    assert reports[5]["dump"] == {"jsonrpc": "2.0", "method": "split", "params": {"k": 1}}
    assert reports[6]["dump"] == {"jsonrpc": "2.0", "id": "last", "method": "end"}
    assert len(reports) == 7
    assert b"stray" not in out
    assert err.count(b"stray print while serving") == 7


def emit_request(request_id: int, data: str) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="emit", params={"data": data}))


async def test_client_delivers_bad_frames_in_band_and_survives() -> None:
    params = StdioServerParameters(command=sys.executable, args=[WIRE_PEER, "emit"], env=child_env())
    response = '{"jsonrpc":"2.0","id":%d,"result":{"ok":true}}'
    data = "".join(
        [
            "garbage\n",
            '{"jsonrpc":"2.0","id":1,"result":{"pad":"' + "b" * (3 * LIMIT) + '"}}\n',
            '{"jsonrpc":"2.0","id":1,"result":{"bad":"\xff"}}\n',  # invalid UTF-8 on the wire
            response % 1 + "\r\n",
        ]
    )
    with anyio.fail_after(30):
        async with mcp_sdk.stdio_client(params, max_frame=LIMIT) as (read, write):
            assert read.statistics().max_buffer_size == 0  # type: ignore[attr-defined]
            await write.send(emit_request(1, data))
            items = [await read.receive() for _ in range(4)]
            await write.send(emit_request(2, response % 2 + "\n"))
            survivor = await read.receive()
    parse, oversize, utf8, ok = items
    assert isinstance(parse, InvalidFrameError)
    assert parse.code == -32700
    assert isinstance(oversize, InvalidFrameError)
    assert str(oversize) == OVERSIZE_MESSAGE
    assert isinstance(utf8, InvalidFrameError)
    assert utf8.code == -32700
    assert "invalid UTF-8" in str(utf8)
    assert isinstance(ok, SessionMessage)
    assert ok.message == JSONRPCResponse(jsonrpc="2.0", id=1, result={"ok": True})
    assert isinstance(survivor, SessionMessage)
    assert survivor.message.id == 2


async def test_client_coalesces_ready_messages_into_one_write() -> None:
    params = StdioServerParameters(command=sys.executable, args=[WIRE_PEER, "emit"], env=child_env())
    count = 50
    with anyio.fail_after(30):
        async with mcp_sdk.stdio_client(params) as (read, write):
            async with anyio.create_task_group() as tg:
                for i in range(count):
                    line = json.dumps({"jsonrpc": "2.0", "id": i, "result": {}}) + "\n"
                    tg.start_soon(write.send, emit_request(i, line))
            ids = sorted([(await read.receive()).message.id for _ in range(count)])  # type: ignore[union-attr]
    assert ids == list(range(count))


def is_gone(pid: int) -> bool:
    """The process no longer runs (absent, or a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_client_exit_ends_the_whole_process_tree() -> None:
    params = StdioServerParameters(command=sys.executable, args=[WIRE_PEER, "stubborn"], env=child_env())
    with anyio.fail_after(30):
        async with mcp_sdk.stdio_client(params) as (read, _write):
            note = await read.receive()
            assert isinstance(note, SessionMessage)
            pids = note.message.params  # type: ignore[union-attr]
            assert pids is not None
            assert not is_gone(pids["child"])
            assert not is_gone(pids["grandchild"])
    assert is_gone(pids["child"])
    assert is_gone(pids["grandchild"])


async def test_non_utf8_encoding_is_served_by_the_sdk_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = mcp_sdk.SDK_STDIO_CLIENT

    def spy(server: StdioServerParameters, errlog: Any) -> Any:
        calls.append(server.encoding)
        return original(server, errlog)

    monkeypatch.setattr(mcp_sdk, "SDK_STDIO_CLIENT", spy)
    env = child_env()
    params = StdioServerParameters(
        command=sys.executable, args=[WIRE_PEER, "emit"], env=env, encoding="latin-1"
    )
    with anyio.fail_after(30):
        async with mcp_sdk.stdio_client(params) as (read, write):
            await write.send(emit_request(1, '{"jsonrpc":"2.0","id":1,"result":{"t":"\xe9"}}\n'))
            item = await read.receive()
    assert calls == ["latin-1"]
    assert isinstance(item, SessionMessage)
    assert item.message == JSONRPCResponse(jsonrpc="2.0", id=1, result={"t": "\xe9"})


async def test_sdk_server_on_the_dropin_survives_garbage_and_oversize() -> None:
    """The SDK's MCPServer ignores what it cannot read (as on its own transport) and answers the rest."""
    env = child_env(MCPFRAME_COMPAT_MAX_FRAME="4096")
    info = {"name": "t", "version": "0"}
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}

    def call(request_id: int, text: str) -> bytes:
        params = {"name": "echo", "arguments": {"text": text}}
        return json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        ).encode()

    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b"}{ garbage",
        call(2, "y" * 10_000),  # oversize: dropped in-band, never answered
        call(3, "small"),
    ]
    with anyio.fail_after(60):
        async with await anyio.open_process(
            [sys.executable, str(HERE / "sdk_server.py"), "dropin"], env=env, stderr=subprocess.DEVNULL
        ) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            await process.stdin.send(b"\n".join(lines) + b"\n")
            buffer = b""
            while buffer.count(b"\n") < 2:
                buffer += await process.stdout.receive()
            await process.stdin.aclose()
            buffer += b"".join([chunk async for chunk in process.stdout])
    responses = [json.loads(line) for line in buffer.splitlines()]
    assert [r["id"] for r in responses] == [1, 3]
    assert responses[1]["result"]["content"][0]["text"] == "small"
