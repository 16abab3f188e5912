"""A lean request whose connection is made in the same loop pass as its cancel is not written.

The lean client posts each request from a task of its own. Its cancel, sent while nothing of the request is
on the wire, drops both (`test_client_cancel_unsent.py`); but the request's exchange is cancelled through
its cancel scope, which lands at the task's next await. A task woken by its finished connect in the same
loop pass as the cancel used to write the request before that: the request went out and its cancel was
dropped, so the server ran a request the caller had cancelled. The connect is a gate in the test (the
lean pool's connect, held after it connected, then released just before the cancel), never timing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from tests._blocked import all_blocked
from tests.streamable_http._client_support import serve_asgi
from tests.streamable_http.test_client_cancel_unsent import CALL, Recorder, cancel, request

from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport

pytestmark = pytest.mark.anyio


async def test_a_request_connected_in_the_same_pass_as_its_cancel_is_not_written() -> None:
    server = Recorder()
    server.answer.set()
    connected = anyio.Event()
    resume = anyio.Event()
    written: list[bytes] = []
    async with serve_asgi(server.app) as url:
        options = HttpClientOptions(lean=True, get_stream=False)
        async with StreamableHTTPTransport(url, options=options) as transport:
            pool = transport.lean_pool
            assert pool is not None
            connect: Callable[[], Awaitable[Any]] = pool._connect
            first = True

            async def held_connect() -> Any:
                nonlocal first
                conn = await connect()
                if first:  # request 1's connection: what is written on it is recorded
                    first = False
                    write = conn.transport.write

                    def recording(data: bytes) -> None:
                        written.append(bytes(data))
                        write(data)

                    conn.transport.write = recording
                    connected.set()
                    await resume.wait()
                return conn

            pool._connect = held_connect  # type: ignore[method-assign]
            with anyio.fail_after(10):
                await transport.send(request(1))
                await connected.wait()
                resume.set()  # request 1's task is due to resume, in the same pass as the cancel below
                await transport.send(cancel(1))  # nothing of request 1 sent yet: both are dropped
                await all_blocked()
                assert written == []
                assert transport.in_flight == 0
                await transport.send(request(2))
                answer = json.loads(await transport.receive())
    assert answer["id"] == 2
    assert written == []
    assert server.order == [(CALL, 2)]
