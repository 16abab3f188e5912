"""The cancel of a request still being written is held in a task: `send` does not wait for the write.

A request whose body the server reads slowly (a large one, a slow network) is partly written. Its cancel
must not overtake it, so it is held until the request was written; but `send` used to wait for that, for up
to the write timeout (30 s by default), and the session's only writer with it: pings, answers to the
server's requests and later requests all waited. Now `send` returns at once and `held_cancel(id)` says when
the cancel went; `mcpframe proxy URL` keeps the request's place in flight until then, without holding up the
client's other frames. The server here is a socket in a thread that stops reading the large body after its
first KiB until the test lets it drain: the partial write is decided by the test, not by timing.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
import pytest
from tests._blocked import all_blocked
from tests.proxy._remote_support import Stdio

from mcpframe import core
from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport
from mcpframe.proxy.remote import proxy_remote

pytestmark = pytest.mark.anyio

CALL = "tools/call"
CANCELLED = "notifications/cancelled"
CHANGED = "notifications/roots/list_changed"
LARGE = 20_000_000


def request(rid: int, size: int = 0) -> bytes:
    return core.encode_request(rid, CALL, {"name": "x", "arguments": {"blob": "a" * size}}) + b"\n"


def cancel(rid: int) -> bytes:
    return core.encode_notification(CANCELLED, {"requestId": rid}) + b"\n"


def changed() -> bytes:
    return core.encode_notification(CHANGED) + b"\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class SlowReader:
    """An HTTP/1.1 server in threads recording each POST's `Mcp-Method` as its head arrives (`order`). A
    body over 1 MB is read up to its first KiB (`partly` is set), then only once `drain` is set; requests
    are answered with an empty result, the rest with 202."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.partly = threading.Event()
        self.drain = threading.Event()
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # inherited: full sooner
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen()
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/mcp"

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.drain.set()
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            buf = bytearray()
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                end = buf.index(b"\r\n\r\n")
                head = bytes(buf[:end])
                del buf[: end + 4]
                fields = dict(
                    (name.strip().lower(), value.strip())
                    for name, _, value in (line.partition(b":") for line in head.split(b"\r\n")[1:])
                )
                with self._lock:
                    self.order.append(fields.get(b"mcp-method", b"").decode())
                size = int(fields[b"content-length"])
                if size > 1_000_000:
                    while len(buf) < 1024:
                        buf += conn.recv(1024)
                    self.partly.set()
                    self.drain.wait(30)
                while len(buf) < size:
                    data = conn.recv(1 << 20)
                    if not data:
                        return
                    buf += data
                body = bytes(buf[:size])
                del buf[:size]
                conn.sendall(self._answer(body))

    @staticmethod
    def _answer(body: bytes) -> bytes:
        message = json.loads(body)
        if "id" not in message:
            return b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}).encode()
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        return head + b"content-length: %d\r\n\r\n" % len(answer) + answer

    async def saw(self, method: str, count: int = 1) -> None:
        while self.order.count(method) < count:
            await anyio.sleep(0.005)


@pytest.fixture
def slow_reader() -> Iterator[SlowReader]:
    server = SlowReader()
    server.start()
    yield server
    server.close()


@asynccontextmanager
async def transport_to(server: SlowReader, lean: bool) -> AsyncIterator[StreamableHTTPTransport]:
    options = HttpClientOptions(lean=lean, get_stream=False)  # the default write timeout: 30 s
    async with StreamableHTTPTransport(server.url, options=options) as transport:
        yield transport


@pytest.mark.parametrize("lean", [True, False])
async def test_the_cancel_of_a_request_being_written_does_not_hold_up_send(
    slow_reader: SlowReader, lean: bool
) -> None:
    async with transport_to(slow_reader, lean) as transport:
        await transport.send(request(1, LARGE))
        await anyio.to_thread.run_sync(slow_reader.partly.wait, 10)
        with anyio.fail_after(10):  # it used to take the write timeout (30 s)
            await transport.send(cancel(1))
            taken = transport.held_cancel(1)
            assert taken is not None
            await transport.send(changed())  # the session's other messages go while request 1 is written
            assert slow_reader.order == [CALL, CHANGED]  # and its cancel waits for it
            assert not taken.is_set()
            assert transport.in_flight == 1
            slow_reader.drain.set()
            await taken.wait()
            await slow_reader.saw(CANCELLED)
            assert transport.held_cancel(1) is None
            while transport.in_flight:  # its exchange ends (cancelled) at its next await
                await anyio.sleep(0.001)
    assert slow_reader.order == [CALL, CHANGED, CANCELLED]


@pytest.mark.parametrize("lean", [True, False])
async def test_the_proxy_keeps_the_place_of_a_request_being_written_until_its_cancel_went(
    slow_reader: SlowReader, lean: bool
) -> None:
    """`proxy_remote(max_in_flight=1)`: request 1 is being written when the client cancels it, sends a
    notification and request 2. The notification goes at once; request 2 waits for the place, which
    request 1 keeps until its cancel went: the server gets the cancel before request 2."""
    stdio = Stdio()
    async with transport_to(slow_reader, lean) as remote, anyio.create_task_group() as tg:
        tg.start_soon(lambda: proxy_remote(stdio, remote, max_in_flight=1))
        await stdio.input.send(request(1, LARGE))
        await anyio.to_thread.run_sync(slow_reader.partly.wait, 10)
        with anyio.fail_after(10):
            await stdio.input.send(cancel(1) + changed() + request(2))
            await slow_reader.saw(CHANGED)  # the proxy's writer is not held up by the cancel
            await all_blocked()
            assert slow_reader.order == [CALL, CHANGED]  # request 2 waits for request 1's place
            slow_reader.drain.set()
            assert (await stdio.answer(2))["result"] == {"content": []}
        tg.cancel_scope.cancel()
    assert slow_reader.order == [CALL, CHANGED, CANCELLED, CALL]
    assert [message.get("id") for message in stdio.out] == [2]
