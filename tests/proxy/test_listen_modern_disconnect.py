"""`mcpframe proxy --listen` in front of a stdio child, a 2026-07-28 (stateless) request whose client
closes its connection before the child answered: the disconnect is the request's cancellation (the spec's
MUST for HTTP), so the proxy tells the child in the stdio spelling, one `notifications/cancelled` for the
id the child saw, on both HTTP servers, whether the POST waited for a JSON answer or had its SSE answer
open. Nothing is logged at WARNING or above, and the shared child goes on serving.

The child here is a small stateless stdio server of the test's own that records in a file each request it
starts and each cancel it is sent; the test waits (within a generous bound) for those lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import BOTH, JSON_ONLY, child_env, open_session, serving_listen

from mcpframe.proxy import ProxyOptions

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}

CHILD = """
import json, sys
record = open(sys.argv[1], "a", buffering=1)
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "child", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    elif message.get("method") == "notifications/cancelled":
        record.write("cancelled %s\\n" % json.dumps(message["params"]["requestId"]))
    elif message.get("method") == "tools/call":
        rid, name = message["id"], message["params"]["name"]
        if name == "slow":  # a log line first (an SSE answer opens for it), never an answer
            record.write("started %s\\n" % json.dumps(rid))
            note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
            print(json.dumps(note), flush=True)
        else:
            content = [{"type": "text", "text": "on"}]
            result = {"resultType": "complete", "content": content}
            print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def listening(child: list[str], http_server: str) -> AsyncIterator[str]:
    """`mcpframe proxy --listen` in front of `child`, served by `http_server` in this process; its URL."""
    options = ProxyOptions(listen="http://127.0.0.1:0/mcp", command=child, env=child_env())
    async with serving_listen(options, http_server) as url:
        yield url


def _post(
    url: str, accept: dict[str, str], tool: str, rid: int, session: dict[str, str] | None = None
) -> bytes:
    """A tools/call of `tool` as HTTP/1.1 bytes: stateless, or in the legacy `session` (its headers)."""
    params: dict[str, Any] = {"name": tool} if session else {"name": tool, "_meta": META}
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}).encode()
    era = session or {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": tool}
    headers = {**accept, **era}
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    host = url.split("/")[2]
    return f"POST /mcp HTTP/1.1\r\nhost: {host}\r\n{head}content-length: {len(body)}\r\n\r\n".encode() + body


async def _lines(record: Path, count: int) -> list[str]:
    """The record's lines once it has `count` of them (the caller bounds the wait)."""
    while True:
        lines = record.read_text().splitlines() if record.exists() else []
        if len(lines) >= count:
            return lines
        await anyio.sleep(0.01)


@pytest.mark.parametrize("answer", ["json", "sse"])
@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_modern_client_that_disconnects_has_the_child_told_once(
    http_server: str, answer: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    record = tmp_path / "record.txt"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    accept = JSON_ONLY if answer == "json" else BOTH
    async with listening([sys.executable, str(script), str(record)], http_server) as url:
        host, port = url.split("/")[2].split(":")
        with anyio.fail_after(20):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(_post(url, accept, "slow", 7))
            [started] = await _lines(record, 1)
            if answer == "sse":  # its SSE answer is open (the child's log line opened it)
                head = await reader.readuntil(b"\r\n\r\n")
                assert b"text/event-stream" in head
            writer.close()  # the client leaves before the child answered
            lines = await _lines(record, 2)
            # the shared child goes on serving; its answer comes after anything it was sent before
            async with httpx.AsyncClient(timeout=10) as http:
                headers = {**JSON_ONLY, "mcp-protocol-version": MODERN, "mcp-method": "tools/call"}
                body = {
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "tools/call",
                    "params": {"name": "echo", "_meta": META},
                }
                again = await http.post(url, json=body, headers={**headers, "mcp-name": "echo"})
        assert again.json()["result"]["content"] == [{"type": "text", "text": "on"}]
        assert lines[1] == "cancelled " + started.split(" ", 1)[1]  # the id the child saw
    # told once: after the whole exchange (the echo, then the proxy's shutdown), not only up to the echo
    assert record.read_text().splitlines() == lines
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_legacy_client_that_leaves_a_json_wait_has_the_child_told_once(
    http_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # a JSON answer is never resumable (no event id was handed out): nobody can receive it any more
    caplog.set_level(logging.WARNING)
    record = tmp_path / "record.txt"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    async with (
        listening([sys.executable, str(script), str(record)], http_server) as url,
        httpx.AsyncClient(timeout=10) as http,
    ):
        session = await open_session(http, url)
        host, port = url.split("/")[2].split(":")
        with anyio.fail_after(20):
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(_post(url, JSON_ONLY, "slow", 7, session))
            [started] = await _lines(record, 1)
            writer.close()  # the client leaves before the child answered
            lines = await _lines(record, 2)
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo"}}
            again = await http.post(url, json=body, headers={**JSON_ONLY, **session})
        assert again.json()["result"]["content"] == [{"type": "text", "text": "on"}]
        assert lines[1] == "cancelled " + started.split(" ", 1)[1]
        assert record.read_text().splitlines() == lines
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
