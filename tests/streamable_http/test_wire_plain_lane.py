"""The lean server's answers to plain POSTs read while nothing waits (`wire._Connection._answer_plain`): whole
fast answers written one after the other, in order with what the app declines, what is not a POST and what
it parks; each POST offered to the app once; the keep-alive's idle timer still runs after them."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from mcpframe.http.asgi import Receive, Send
from mcpframe.http.wire import Parked
from mcpframe.http.wire_parts import WireAnswer

from ._wire_support import ok_bodies as _bodies
from ._wire_support import post, request_body, wire_connection

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server is built on asyncio Protocols


class _App:
    """`whole:X` is answered `X` by the fast path, `park:X` parked (delivered `X` by the test), anything
    else (and every GET) by the ASGI call, `asgi-` and the body."""

    def __init__(self) -> None:
        self.offered: list[bytes] = []
        self.parked: list[Parked] = []
        self.arrived = asyncio.Event()

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        body = await request_body(receive)
        answer = b"asgi-" + (body or scope["method"].encode())
        headers = [(b"content-length", b"%d" % len(answer))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    def wire_fast(self, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> WireAnswer | None:
        self.offered.append(body)
        if body.startswith(b"whole:"):
            return 200, b"content-type: text/plain\r\n", body[6:]
        if body.startswith(b"park:"):
            parked = Parked()
            self.parked.append(parked)
            self.arrived.set()
            return parked
        return None


async def test_pipelined_answers_keep_their_order_and_each_post_is_offered_once() -> None:
    app = _App()
    get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    requests = [post(b"whole:a"), post(b"whole:b"), post(b"c"), get, post(b"whole:d"), post(b"e")]
    with anyio.fail_after(10):
        async with wire_connection(app) as (_, reader, writer):
            writer.write(b"".join(requests))
            bodies = await _bodies(reader, 6)
            writer.write(post(b"whole:f"))  # the connection goes on
            bodies += await _bodies(reader, 1)
    assert bodies == [b"a", b"b", b"asgi-c", b"asgi-GET", b"d", b"asgi-e", b"f"]
    assert app.offered == [b"whole:a", b"whole:b", b"c", b"whole:d", b"e", b"whole:f"]


async def test_a_parked_answer_holds_back_the_whole_ones_behind_it() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (_, reader, writer):
            writer.write(post(b"whole:a") + post(b"park:b") + post(b"whole:c"))
            while not app.parked:
                app.arrived.clear()
                await app.arrived.wait()
            assert await _bodies(reader, 1) == [b"a"]
            assert app.offered == [b"whole:a", b"park:b"]  # `c` waits for `b`'s answer
            app.parked[0].deliver((200, b"", b"b"))
            assert await _bodies(reader, 2) == [b"b", b"c"]
    assert app.offered == [b"whole:a", b"park:b", b"whole:c"]


async def test_a_connection_answered_whole_is_closed_once_idle() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app, keepalive_timeout=0.05) as (_, reader, writer):
            writer.write(post(b"whole:a") + post(b"whole:b"))
            assert await _bodies(reader, 2) == [b"a", b"b"]
            assert await reader.read() == b""  # closed by the server once idle past the timeout
