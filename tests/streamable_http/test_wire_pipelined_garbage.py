"""Valid requests followed, in the same packet, by bytes that are no HTTP: the lean server answers the valid
ones first, in order, then refuses the rest with a 400 and closes.

Found by an audit: the parser's error dropped the requests parsed before the bad bytes, so a client got a
plain-text 400 for a packet whose first request was valid, and that request's answer was lost.
"""

from __future__ import annotations

import pytest

from .test_wire_server import exchange, post, server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_request_before_garbage_is_answered_then_the_400() -> None:
    async with server() as port:
        got = await exchange(port, post("/", b"first") + b"GARBAGE\r\n\r\n", b"Bad Request", count=1)
    assert got.startswith(b"HTTP/1.1 200 OK")
    assert got.index(b"first") < got.index(b"HTTP/1.1 400 Bad Request")
    assert got.endswith(b"connection: close\r\n\r\nBad Request")


async def test_several_requests_before_garbage_are_answered_in_order() -> None:
    data = b"".join(post("/", b"<%d>" % i) for i in range(5)) + b"GARBAGE\r\n\r\n" + post("/", b"after")
    async with server() as port:
        got = await exchange(port, data, b"Bad Request", count=1)
    assert got.count(b"HTTP/1.1 200 OK") == 5
    assert [got.index(b"<%d>" % i) for i in range(5)] == sorted(got.index(b"<%d>" % i) for i in range(5))
    assert got.index(b"<4>") < got.index(b"HTTP/1.1 400")
    assert b"after" not in got  # nothing after the bad bytes is read


async def test_garbage_alone_is_still_refused_at_once() -> None:
    async with server() as port:
        got = await exchange(port, b"GARBAGE\r\n\r\n", b"Bad Request", count=1)
    assert got.startswith(b"HTTP/1.1 400 Bad Request")
