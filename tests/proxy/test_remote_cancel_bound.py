"""`proxy_remote`'s in-flight bound and the client's cancels: a cancelled request keeps its place until the
server transport took its cancel (the transport still runs the request's exchange until then: it posts the
cancel, then closes the request's stream), so a request waiting for room is not posted meanwhile and the
transport does not run more than `max_in_flight` exchanges. Between two in-memory byte transports, then
through the real transport and fast lane to a scripted in-process HTTP server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest
from tests._blocked import all_blocked
from tests.proxy._remote_support import SSE_HEAD, GatedStdio, Server, call, event, result, until

from mcpframe import core
from mcpframe.http.client_fast import FastLane
from mcpframe.proxy.remote import proxy_remote, remote_transport

pytestmark = pytest.mark.anyio


class SlowCancels:
    """A server transport whose `send` of a cancel returns only once `release` is set (a transport still
    busy posting it); it records what it is sent (`sent`), what it started taking included."""

    def __init__(self) -> None:
        self.incoming_send, self.incoming = anyio.create_memory_object_stream[bytes](100)
        self.sent: list[dict] = []
        self.release = anyio.Event()
        self.changed = anyio.Event()

    async def receive(self) -> bytes:
        try:
            return await self.incoming.receive()
        except anyio.EndOfStream:
            return b""

    async def send(self, data: bytes) -> None:
        frames = [json.loads(line) for line in data.splitlines() if line]
        self.sent += frames
        self.changed.set()
        self.changed = anyio.Event()
        if any(frame.get("method") == "notifications/cancelled" for frame in frames):
            await self.release.wait()

    async def wait_for(self, count: int) -> None:
        while len(self.sent) < count:
            await self.changed.wait()


class Client:
    def __init__(self) -> None:
        self.incoming_send, self.incoming = anyio.create_memory_object_stream[bytes](100)
        self.sent: list[bytes] = []

    async def receive(self) -> bytes:
        try:
            return await self.incoming.receive()
        except anyio.EndOfStream:
            return b""

    async def send(self, data: bytes) -> None:
        self.sent.append(data)


def request_line(rid: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call"}).encode() + b"\n"


def cancel(rid: int) -> bytes:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
    return json.dumps(body).encode() + b"\n"


def live(sent: list[dict]) -> set[int]:
    """The requests the server transport was given and not yet told are cancelled."""
    ids = {frame["id"] for frame in sent if "method" in frame and "id" in frame}
    return ids - {frame["params"]["requestId"] for frame in sent if "id" not in frame}


async def test_a_request_waiting_for_room_is_posted_only_once_the_cancel_was_taken() -> None:
    client, server = Client(), SlowCancels()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server, max_in_flight=1, max_backlog=2))
            await client.incoming_send.send(request_line(1) + request_line(2))
            await server.wait_for(1)
            await client.incoming_send.send(cancel(1))
            await server.wait_for(2)  # the cancel is being taken
            await all_blocked()
            assert [frame.get("id") for frame in server.sent] == [1, None]  # 2 still waits for room
            server.release.set()
            await server.wait_for(3)
            assert server.sent[2]["id"] == 2
            assert live(server.sent) == {2}
            await server.incoming_send.send(core.encode_result(2, {}))
            client.incoming_send.close()
    assert [json.loads(line)["id"] for data in client.sent for line in data.splitlines()] == [2]


class CancelGate(Server):
    """A server that holds request 1's SSE answer open until the client closes it (`events` records it),
    answers any other request at once, and answers a cancel's POST only once `gate` is set."""

    def __init__(self) -> None:
        super().__init__(self._request)
        self.events: list[str] = []
        self.gate = asyncio.Event()
        self._readers: dict[asyncio.StreamWriter, asyncio.StreamReader] = {}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._readers[writer] = reader
        await super().handle(reader, writer)

    async def respond(
        self, verb: str, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter
    ) -> None:
        if verb == "POST" and json.loads(body).get("method") == "notifications/cancelled":
            self.events.append("cancel")
            await self.gate.wait()
        await super().respond(verb, headers, body, writer)

    async def _request(
        self, message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter
    ) -> None:
        rid = message["id"]
        self.events.append(f"{rid} posted")
        if rid != 1:
            writer.write(SSE_HEAD + event(result(rid)) + b"0\r\n\r\n")
            return
        writer.write(SSE_HEAD)
        await writer.drain()
        await self._readers[writer].read()  # until the client closes the connection
        self.events.append("1 closed")


async def test_through_the_transport_the_next_request_comes_after_the_cancelled_ones_exchange_ended() -> None:
    server = CancelGate()
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    stdio = GatedStdio()
    try:
        with anyio.fail_after(20):
            async with (
                remote_transport(f"http://127.0.0.1:{port}/mcp", {}) as remote,
                anyio.create_task_group() as tg,
            ):
                lane = FastLane(remote.streamable, max_open=4)
                tg.start_soon(lambda: proxy_remote(stdio, remote, lane=lane, max_in_flight=1, max_backlog=2))
                init = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                }
                await stdio.write({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
                await stdio.answer("init")
                await stdio.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
                await stdio.write(call(1))
                await until(lambda: "1 posted" in server.events)
                await stdio.write(call(2))  # waits for room
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
                await stdio.write(cancel)
                await until(lambda: "cancel" in server.events)
                with anyio.move_on_after(0.3):  # a proxy that freed the place at once posts 2 now
                    await until(lambda: "2 posted" in server.events)
                server.gate.set()
                await stdio.answer(2)
                tg.cancel_scope.cancel()
    finally:
        listener.close()
    assert server.events.index("1 closed") < server.events.index("2 posted"), server.events
    assert not [m for m in stdio.out if m.get("id") == 1]
