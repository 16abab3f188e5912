"""`mcpframe proxy --listen`: a request body that trickles in (slow-loris) gets 408 once
`HttpOptions.body_timeout` passes, and its connection is closed, as `mcpframe serve --http` does
(tests/streamable_http/test_slow_body.py); the session's other requests are served meanwhile. On both HTTP
servers, on `/mcp` and on the legacy `POST /messages/`.

Before, the proxy read a POST's body with no bound on its time: a client sending its head and then nothing
(or a byte now and then) held its request, and its connection, for as long as it liked.

The child is a small stdio server of the test's own (answers `initialize` and echoes `tools/call`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import BOTH, JSON_ONLY, child_env, open_session, serving_listen

from mcpframe.http.options import HttpOptions
from mcpframe.proxy import ProxyOptions

pytestmark = pytest.mark.anyio

SERVERS = ["mcpframe", "uvicorn"]
TIMEOUT = 0.5
TOO_SLOW = f"Request Timeout: the request body did not all come within {TIMEOUT:g} seconds"

CHILD = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "child", "version": "1"}}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": json.dumps(message["params"]["arguments"])}]}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, separators=(",", ":")), flush=True)
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the slow client is an asyncio stream


@contextlib.asynccontextmanager
async def listening(http_server: str, body_timeout: float) -> AsyncIterator[str]:
    """The proxy in front of `CHILD`, served by `http_server` in this process with `body_timeout`; its URL."""
    options = ProxyOptions(
        listen="http://127.0.0.1:0/mcp",
        command=[sys.executable, "-c", CHILD],
        env=child_env(),
        http=HttpOptions(body_timeout=body_timeout),
    )
    async with serving_listen(options, http_server) as url:
        yield url


def call(rid: int, n: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"n": n}},
    }


def head(url: str, target: str, headers: dict[str, str], length: int) -> bytes:
    host = url.split("/")[2]
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"POST {target} HTTP/1.1\r\nhost: {host}\r\n{lines}content-length: {length}\r\n\r\n".encode()


def message_of(response: bytes) -> str:
    """The JSON-RPC error message of a raw HTTP/1.1 response (its body, plain or chunked)."""
    payload = response.split(b"\r\n\r\n", 1)[1].split(b"\r\n")
    text = next(p for p in payload if p.startswith(b"{"))
    got: str = json.loads(text)["error"]["message"]
    return got


async def slow_post(
    url: str, target: str, headers: dict[str, str], body: bytes, sent: str
) -> tuple[Any, Any]:
    """Open a connection and send a POST's head (and the first 10 bytes of its body if `sent` says so), never
    the rest: its reader and writer."""
    port = int(url.split("/")[2].split(":")[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head(url, target, headers, len(body)))
    if sent == "part of the body":
        writer.write(body[:10])
    await writer.drain()
    return reader, writer


@pytest.mark.parametrize("http_server", SERVERS)
@pytest.mark.parametrize("sent", ["head only", "part of the body"])
async def test_a_slow_body_on_mcp_gets_408_and_the_session_is_served(http_server: str, sent: str) -> None:
    body = json.dumps(call(2, 2)).encode()
    with anyio.fail_after(30):
        async with listening(http_server, TIMEOUT) as url, httpx.AsyncClient(timeout=10) as client:
            session = await open_session(client, url)
            reader, writer = await slow_post(url, "/mcp", {**BOTH, **session}, body, sent)
            # another request of the session is answered meanwhile
            answer = await client.post(url, json=call(3, 3), headers={**JSON_ONLY, **session})
            got = await reader.read()  # to its end: the proxy closes the connection
            writer.close()
    assert answer.status_code == 200, answer.text
    assert json.loads(answer.json()["result"]["content"][0]["text"]) == {"n": 3}
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert message_of(got) == TOO_SLOW


@pytest.mark.parametrize("http_server", SERVERS)
async def test_a_slow_body_on_legacy_messages_gets_408(http_server: str) -> None:
    body = json.dumps(call(2, 2)).encode()
    with anyio.fail_after(30):
        async with listening(http_server, TIMEOUT) as url, httpx.AsyncClient(timeout=10) as client:
            base = url.removesuffix("/mcp")
            async with client.stream("GET", base + "/sse", headers={"accept": "text/event-stream"}) as sse:
                lines = sse.aiter_lines()
                async for line in lines:
                    if line.startswith("data: "):
                        endpoint = line.removeprefix("data: ")
                        break
                content = {"content-type": "application/json"}
                reader, writer = await slow_post(url, endpoint, content, body, "part of the body")
                got = await reader.read()
                writer.close()
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert message_of(got) == TOO_SLOW


@pytest.mark.parametrize("http_server", SERVERS)
async def test_a_body_that_comes_in_parts_in_time_is_forwarded(http_server: str) -> None:
    body = json.dumps(call(2, 7)).encode()
    with anyio.fail_after(30):
        async with listening(http_server, 20) as url, httpx.AsyncClient(timeout=10) as client:
            session = await open_session(client, url)
            reader, writer = await slow_post(url, "/mcp", {**JSON_ONLY, **session}, body, "part of the body")
            writer.write(body[10:])
            got = await reader.readuntil(b'"id":2')
            writer.close()
    assert got.startswith(b"HTTP/1.1 200 "), got[:200]
