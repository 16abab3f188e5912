"""Many pipelined requests on one connection of the lean server: every one answered, in order.

Found by the hostile-input fuzzer (`tests/fuzz`): requests whose answers need no waiting were each started
from inside the one before (eager start, or the app's fast path), so a few hundred pipelined requests
exceeded the recursion limit; the connection was cut and every answer after that point lost.
"""

from __future__ import annotations

import json

import pytest

from ._live_support import GatedTools, serving
from .test_wire_server import exchange, post, server

pytestmark = pytest.mark.anyio

COUNT = 3000  # past any recursion limit were each request started from the one before


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_thousands_of_pipelined_requests_are_all_answered_in_order() -> None:
    requests = b"".join(post("/", b"<%d>" % i) for i in range(COUNT))
    async with server() as port:
        got = await exchange(port, requests, b"HTTP/1.1 200", count=COUNT)
    assert got.count(b"HTTP/1.1 200 OK") == COUNT
    bodies = [int(part.split(b">", 1)[0]) for part in got.split(b"<")[1:]]
    assert bodies == list(range(COUNT))


async def test_pipelined_mcp_posts_are_all_answered_in_order() -> None:
    async with serving(GatedTools("pipelined")) as (url, _, _, headers):
        authority = url.split("//", 1)[1].split("/", 1)[0]
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items()).encode()
        requests = b"".join(
            b"POST /mcp HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n%s"
            % (authority.encode(), head, len(body), body)
            for body in (
                json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode() for i in range(COUNT)
            )
        )
        got = await exchange(int(authority.rsplit(":", 1)[1]), requests, b'"result":{}', count=COUNT)
    ids = [json.loads(line[5:])["id"] for line in got.split(b"\n") if line.startswith(b"data: {")]
    assert ids == list(range(COUNT))
