"""A request body that trickles in (slow-loris) gets 408 once `HttpOptions.body_timeout` passes, and its
connection is closed; the other sessions are served meanwhile. On both HTTP servers.

Before, neither server bounded the time a body may take: a client sending its head and then one byte every
100 ms held its request (and its connection) for as long as it liked.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http.server import HttpOptions
from mcpframe.server import Server

from ._server_support import JSON_AND_SSE, open_session, served

pytestmark = pytest.mark.anyio

SERVERS = ["uvicorn", "mcpframe"]


def make_server() -> Server:
    server = Server("slow-body", version="1.0.0")

    @server.tool
    async def echo(n: int) -> int:
        """Return n."""
        return n

    return server


def head(url: str, headers: dict[str, str], length: int) -> bytes:
    host = url.split("/")[2].encode()
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
    return b"POST /mcp HTTP/1.1\r\nhost: %s\r\n%scontent-length: %d\r\n\r\n" % (host, lines, length)


@pytest.mark.parametrize("http_server", SERVERS)
@pytest.mark.parametrize("sent", ["head only", "part of the body"])
async def test_a_body_that_does_not_come_in_time_gets_408_and_others_are_served(
    http_server: str, sent: str
) -> None:
    server = make_server()
    options = HttpOptions(body_timeout=0.5)
    call: dict[str, Any] = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    call["params"] = {"name": "echo", "arguments": {"n": 2}}
    body = json.dumps(call).encode()
    with anyio.fail_after(30):
        async with (
            served(server, options=options, http_server=http_server) as url,
            httpx.AsyncClient(timeout=10) as client,
        ):
            headers = await open_session(client, url)
            port = int(url.split("/")[2].split(":")[1])
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head(url, headers, len(body)))
            if sent == "part of the body":
                writer.write(body[:10])  # and the rest never (a byte now and then would do the same)
            # another request of the session is answered meanwhile
            answer = await client.post(url, json={**call, "id": 3}, headers=headers)
            got = await reader.read()  # to its end: the server closes the connection
            writer.close()
    assert answer.status_code == 200
    assert got.startswith(b"HTTP/1.1 408 ")
    payload = json.loads(got.split(b"\r\n\r\n", 1)[1].split(b"\r\n")[-1] or b"{}")
    assert payload["error"]["message"] == (
        "Request Timeout: the request body did not all come within 0.5 seconds"
    )


@pytest.mark.parametrize("http_server", SERVERS)
async def test_a_body_that_comes_in_parts_in_time_is_answered(http_server: str) -> None:
    server = make_server()
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"n": 2}},
    }
    body = json.dumps(call).encode()
    with anyio.fail_after(30):
        async with (
            served(server, options=HttpOptions(body_timeout=20), http_server=http_server) as url,
            httpx.AsyncClient(timeout=10) as client,
        ):
            headers = {**await open_session(client, url), "accept": JSON_AND_SSE["accept"]}
            port = int(url.split("/")[2].split(":")[1])
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head(url, headers, len(body)) + body[:10])
            await writer.drain()
            writer.write(body[10:])
            got = await reader.readuntil(b'"id":2')
            writer.close()
    assert got.startswith(b"HTTP/1.1 200 ")
