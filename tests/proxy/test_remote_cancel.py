"""The remote proxy and a client's `notifications/cancelled`: once the proxy read the cancel of a request in
flight, the cancel is posted to the server and no answer to that request is written to the client, on the
fast lane and on the transport's full path; a request the lane had not posted yet is never posted, and a
stream queued for the transport to resume is not resumed. Against a scripted in-process HTTP server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.proxy.test_remote_lane_bound import SSE_HEAD, Answer, GatedStdio, Server, call, event, result

from mcpframe.http.client_fast import FastLane
from mcpframe.proxy.remote import proxy_remote, remote_transport

pytestmark = pytest.mark.anyio


class Recording(Server):
    """`Server`, recording the ids of the requests posted to it and of the cancels; `before_202` (if set)
    runs before a cancel is acknowledged."""

    def __init__(self, on_request: Answer, on_resume: Answer | None = None) -> None:
        super().__init__(on_request, on_resume)
        self.requests: list[Any] = []
        self.cancels: list[Any] = []
        self.before_202: Callable[[], Awaitable[None]] | None = None

    async def respond(
        self, verb: str, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter
    ) -> None:
        message = json.loads(body) if verb == "POST" else {}
        if message.get("method") == "notifications/cancelled":
            self.cancels.append(message["params"]["requestId"])
            if self.before_202 is not None:
                await self.before_202()
        elif "id" in message and message.get("method") != "initialize":
            self.requests.append(message["id"])
        await super().respond(verb, headers, body, writer)


@asynccontextmanager
async def proxied(server: Server, *, max_open: int | None = 64) -> AsyncIterator[tuple[GatedStdio, Any]]:
    """An in-process `mcpframe proxy URL` to `server` with a fast lane of `max_open` connections (`None`:
    no lane), the handshake done; yields its stdio (not gated unless the test gates it) and transport."""
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    stdio = GatedStdio()
    try:
        async with (
            remote_transport(f"http://127.0.0.1:{port}/mcp", {}) as remote,
            anyio.create_task_group() as tg,
        ):
            lane = None if max_open is None else FastLane(remote.streamable, max_open=max_open)
            tg.start_soon(lambda: proxy_remote(stdio, remote, lane=lane))
            init = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            }
            await stdio.write({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
            await stdio.answer("init")
            await stdio.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
            stdio.out.clear()  # the test's own lines from here
            yield stdio, remote
            stdio.release.set()
            tg.cancel_scope.cancel()
    finally:
        listener.close()


def cancel(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}


def answers(stdio: GatedStdio, rid: Any) -> list[dict[str, Any]]:
    return [m for m in stdio.out if m.get("id") == rid and "method" not in m]


async def test_a_cancel_naming_no_valid_id_is_passed_on_and_the_proxy_goes_on() -> None:
    async def plain(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD + event(result(message["id"])) + b"0\r\n\r\n")

    server = Recording(plain)
    with anyio.fail_after(10):
        async with proxied(server) as (stdio, _):
            for hostile in ([1], {"a": 1}, None, 1.5):
                await stdio.write(cancel(hostile))
            await stdio.write(call(4))
            await stdio.answer(4)
            assert server.cancels == [[1], {"a": 1}, None, 1.5]
