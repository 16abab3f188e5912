"""mcpframe's own HTTP/1.1 server (`http/wire.py`) on raw sockets: framing, keep-alive, pipelining, limits.

The MCP behaviour over it is covered by running `tests/streamable_http` with `MCPFRAME_HTTP_SERVER=mcpframe`;
these cases pin down the HTTP/1.1 parts a client library would hide.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

import anyio
import pytest

from mcpframe.http.wire import WireServer, serve_asgi

from ._wire_support import request_body

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server is built on asyncio Protocols


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Echo the body; `/stream` answers two chunks without a length; `/fail` raises."""
    body = await request_body(receive)
    if scope["path"] == "/fail":
        raise RuntimeError("boom")
    if scope["path"] == "/stream":
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"data: 2\n\n", "more_body": False})
        return
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def server(asgi: Any = app, **options: float) -> AsyncIterator[int]:
    """`asgi` (default: the echo `app`) under `serve_asgi(..., **options)` on a free port; yields it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    task = asyncio.get_running_loop().create_task(serve_asgi(asgi, sock, **options))
    try:
        yield sock.getsockname()[1]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        sock.close()


async def exchange(port: int, data: bytes, until: bytes, count: int = 1) -> bytes:
    """Send `data`; read until `until` has been seen `count` times, or the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    got = b""
    with anyio.fail_after(10):
        while got.count(until) < count:
            chunk = await reader.read(65536)
            if not chunk:
                break
            got += chunk
    writer.close()
    return got


def post(path: str, body: bytes, extra: bytes = b"") -> bytes:
    return b"POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s" % (
        path.encode(),
        extra,
        len(body),
        body,
    )


async def test_pipelined_requests_are_answered_in_order_on_one_connection() -> None:
    async with server() as port:
        got = await exchange(port, post("/", b"first") + post("/", b"second"), b"HTTP/1.1 200", count=2)
    assert got.count(b"HTTP/1.1 200 OK") == 2
    assert got.index(b"first") < got.index(b"second")
    assert got.endswith(b"second")
    assert b"connection: close" not in got


async def test_a_streamed_answer_is_chunked() -> None:
    async with server() as port:
        got = await exchange(port, post("/stream", b""), b"0\r\n\r\n")
    head, _, body = got.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    assert body == b"9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n"


async def test_connection_close_is_honoured() -> None:
    async with server() as port:
        got = await exchange(port, post("/", b"x", b"Connection: close\r\n"), b"never")
    assert got.startswith(b"HTTP/1.1 200 OK")
    assert b"connection: close" in got


async def test_an_oversized_head_is_refused_with_431() -> None:
    async with server() as port:
        got = await exchange(port, post("/", b"", b"X-Big: %s\r\n" % (b"a" * 70_000)), b"never")
    assert got.startswith(b"HTTP/1.1 431")


async def test_garbage_is_refused_with_400() -> None:
    async with server() as port:
        got = await exchange(port, b"NOT HTTP AT ALL\r\n\r\n", b"never")
    assert got.startswith(b"HTTP/1.1 400")


async def test_a_request_target_that_is_no_url_is_refused_with_400() -> None:
    # httptools' parser takes it; its URL parser (run when the ASGI scope is built) does not
    async with server() as port:
        got = await exchange(port, b"GET http://[bad/x HTTP/1.1\r\nHost: a\r\n\r\n", b"never")
    assert got.startswith(b"HTTP/1.1 400")


async def test_a_failing_app_costs_a_500_and_the_connection() -> None:
    async with server() as port:
        got = await exchange(port, post("/fail", b""), b"never")
    assert got.startswith(b"HTTP/1.1 500")
    assert b"connection: close" in got


async def test_the_apps_content_length_is_written_once() -> None:
    async with server() as port:
        got = await exchange(port, post("/", b"hello"), b"hello")
    head = got.partition(b"\r\n\r\n")[0].lower()
    assert head.count(b"content-length:") == 1
    assert head.endswith(b"content-length: 5") or b"content-length: 5\r\n" in head


async def early(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answer 413 without reading the body, as a body limit does."""
    await send({"type": "http.response.start", "status": 413, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def test_a_body_left_unread_is_dropped_and_the_connection_goes_on() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    task = asyncio.get_running_loop().create_task(serve_asgi(early, sock))
    try:
        big = post("/", b"x" * 300_000)
        got = await exchange(sock.getsockname()[1], big + post("/", b"y"), b"HTTP/1.1 413", count=2)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        sock.close()
    # the standard phrase of the running Python (3.13 says RFC 9110's "Content Too Large")
    assert got.count(b"HTTP/1.1 413 " + HTTPStatus(413).phrase.encode()) == 2


async def test_a_drain_closes_idle_connections_and_lets_the_answer_under_way_finish() -> None:
    release = asyncio.Event()
    started = asyncio.Event()

    async def hold(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        if scope["path"] == "/hold":
            started.set()
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    wire = WireServer(hold)
    await wire.listen(sock)
    port = sock.getsockname()[1]
    try:
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", port)
        idle_writer.write(post("/", b""))
        busy_reader, busy_writer = await asyncio.open_connection("127.0.0.1", port)
        busy_writer.write(post("/hold", b""))
        with anyio.fail_after(10):
            assert (await idle_reader.readuntil(b"ok")).startswith(b"HTTP/1.1 200")
            await started.wait()
            draining = asyncio.get_running_loop().create_task(wire.drain(10))
            assert await idle_reader.read() == b""  # the idle connection is closed at once
            assert not draining.done()  # the held answer is still under way
            release.set()
            last = await busy_reader.read()  # read to the end: the server closes after the answer
            await draining
        assert last.startswith(b"HTTP/1.1 200")
        assert last.endswith(b"ok")
        assert b"connection: close" in last
        assert not wire.connections
        with pytest.raises(ConnectionRefusedError):  # the listener is closed
            await asyncio.open_connection("127.0.0.1", port)
        idle_writer.close()
        busy_writer.close()
    finally:
        await wire.close()
        sock.close()


async def test_a_head_that_comes_too_slowly_is_refused_with_408() -> None:
    async with server(head_timeout=0.05) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\n")  # and never the rest (slow-loris)
        with anyio.fail_after(10):
            got = await reader.read()  # to the end: the server closes
        writer.close()
    assert got.startswith(b"HTTP/1.1 408 Request Timeout")
    assert b"connection: close" in got


async def test_expect_100_continue_is_answered_before_the_body_is_read() -> None:
    async with server() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        head = b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
        writer.write(head)  # and wait, as a client that asked for 100 Continue does
        with anyio.fail_after(10):
            interim = await reader.readuntil(b"\r\n\r\n")
            writer.write(b"hello")
            got = await reader.readuntil(b"hello")
        writer.close()
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert got.startswith(b"HTTP/1.1 200 OK")
    assert b"connection: close" not in got  # the body came: the connection goes on


async def test_an_answer_given_before_100_continue_closes_the_connection() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    task = asyncio.get_running_loop().create_task(serve_asgi(early, sock))
    try:
        head = b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
        got = await exchange(sock.getsockname()[1], head, b"never")  # read to the end: the server closes
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        sock.close()
    assert got.startswith(b"HTTP/1.1 413")
    assert b"100 Continue" not in got
    assert b"connection: close" in got


async def test_an_idle_keep_alive_connection_is_closed_and_a_busy_one_is_not() -> None:
    """The keep-alive timeout closes a connection idle between requests, not one whose answer is slow."""
    release = asyncio.Event()

    async def slow(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        if scope["path"] == "/slow":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async with server(slow, keepalive_timeout=0.05) as port:
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", port)
        idle_writer.write(post("/", b""))
        busy_reader, busy_writer = await asyncio.open_connection("127.0.0.1", port)
        busy_writer.write(post("/slow", b""))
        with anyio.fail_after(10):
            first = await idle_reader.readuntil(b"ok")
            assert await idle_reader.read() == b""  # closed by the server once idle past the timeout
        # the busy connection outlived many sweeps: its answer is still to come, then it is kept alive (the
        # next request goes out before the answer, pipelined: written after it, a stall of the loop longer
        # than the 0.05 s timeout between the answer and the write would rightly close the connection)
        busy_writer.write(post("/", b""))
        release.set()
        with anyio.fail_after(10):
            slow_answer = await busy_reader.readuntil(b"ok")
            second = await busy_reader.readuntil(b"ok")
        idle_writer.close()
        busy_writer.close()
    assert first.startswith(b"HTTP/1.1 200 OK")
    assert slow_answer.startswith(b"HTTP/1.1 200 OK")
    assert second.startswith(b"HTTP/1.1 200 OK")
