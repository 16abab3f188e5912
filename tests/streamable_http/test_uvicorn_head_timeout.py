"""`serve_http` bounds the time a request head may take on uvicorn too (`HttpOptions.head_timeout`), as the
lean server does: a slow-loris client, trickling its head in or opening a connection and sending nothing,
gets 408 (or, silent, the connection closed) instead of holding the connection forever.

What is asserted is that the server ends the connection by itself (each wait bounded by `fail_after`, far
above the short timeouts used here), never how soon.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from urllib.parse import urlsplit

import anyio
import pytest
from tests.streamable_http._server_support import init_body, make_server, served

from mcpframe.http import uvicorn_host
from mcpframe.http.options import HttpOptions

pytestmark = pytest.mark.anyio

SHORT = 0.3  # the head timeout under test: seconds
HEAD = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"accept: application/json, text/event-stream\r\ncontent-length: 2\r\n\r\n"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # raw asyncio streams below


async def _open(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    where = urlsplit(url)
    assert where.hostname is not None
    assert where.port is not None
    return await asyncio.open_connection(where.hostname, where.port)


async def _trickle(writer: asyncio.StreamWriter) -> None:
    """A head one byte at a time, never finished (the last header line never ends), until the server
    closes the connection."""
    with contextlib.suppress(ConnectionError):
        for byte in HEAD[:-4]:
            writer.write(bytes([byte]))
            await writer.drain()
            await anyio.sleep(0.02)


async def _until_closed(reader: asyncio.StreamReader) -> bytes | None:
    """What the server said before it closed the connection; `None`: it reset it (a client still writing
    when the server closes gets a reset, which may take the unread answer with it)."""
    try:
        return await reader.read()
    except ConnectionResetError:
        return None


@pytest.mark.parametrize("http_server", ["uvicorn", "mcpframe"])
async def test_a_stalled_head_gets_408(http_server: str) -> None:
    options = HttpOptions(head_timeout=SHORT)
    async with served(make_server(), options=options, http_server=http_server) as url:
        reader, writer = await _open(url)
        try:
            with anyio.fail_after(20):
                writer.write(HEAD[:30])  # begun, never finished
                answer = await reader.read()  # until the server closes the connection
        finally:
            writer.close()
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert answer.endswith(b"Request Timeout: the request head came too slowly")


@pytest.mark.parametrize("http_server", ["uvicorn", "mcpframe"])
async def test_a_trickled_head_is_cut(http_server: str) -> None:
    """The bytes coming in do not hold the deadline off: it runs from the head's first byte."""
    assert len(HEAD) * 0.02 > 5 * SHORT  # the trickle lasts well past the deadline
    options = HttpOptions(head_timeout=SHORT)
    async with served(make_server(), options=options, http_server=http_server) as url:
        reader, writer = await _open(url)
        try:
            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_trickle, writer)
                    answer = await _until_closed(reader)
                    tg.cancel_scope.cancel()
        finally:
            writer.close()
    assert answer is None or answer.startswith(b"HTTP/1.1 408 ")


async def test_a_silent_connection_is_closed_on_uvicorn() -> None:
    async with served(make_server(), options=HttpOptions(head_timeout=SHORT), http_server="uvicorn") as url:
        reader, writer = await _open(url)
        try:
            with anyio.fail_after(20):
                answer = await reader.read()
        finally:
            writer.close()
    assert answer == b""  # closed, with nothing said: no request began


async def test_a_head_in_time_is_answered_and_the_connection_kept() -> None:
    payload = json.dumps(init_body()).encode()
    head = HEAD.replace(b"content-length: 2", b"content-length: %d" % len(payload))
    async with served(make_server(), options=HttpOptions(head_timeout=SHORT), http_server="uvicorn") as url:
        reader, writer = await _open(url)
        try:
            with anyio.fail_after(20):
                writer.write(head + payload)
                status = await reader.readline()
        finally:
            writer.close()
    assert status.startswith(b"HTTP/1.1 200 ")


def test_the_uvicorn_protocol_is_the_bounded_one() -> None:
    """httptools is installed here: `serve_http` gives uvicorn the protocol that bounds heads (else the
    tests above would be testing uvicorn's own, unbounded, h11 protocol)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415 - httptools' only

    protocol = uvicorn_host.bounded_heads(10.0, 5)
    assert protocol is not None
    assert issubclass(protocol, HttpToolsProtocol)
    # (by name: another test makes `host_from_target` anew, a class that is not this one's base)
    assert [cls.__name__ for cls in protocol.__mro__[:2]] == ["BoundedHeads", "HostFromTarget"]
