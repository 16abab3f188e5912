"""The remote proxy's fast lane (`http/client_fast.py`) behind a slow stdout: what it queues for the writer
stays bounded while a server streams, and a stream the transport resumes does not overtake what the lane
still has to write; a JSON answer longer than a connection's read mark is read whole. Against a scripted
in-process HTTP server (one per test)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._remote_support import (
    SSE_HEAD,
    Resumed,
    Server,
    call,
    event,
    log,
    proxied,
    record_take_overs,
    result,
    until,
)

pytestmark = pytest.mark.anyio

EVENTS = 96
PAYLOAD = "x" * 65536  # 96 x 64 KiB: 6 MiB, well past the lane's bound (1 MiB) and the sockets' buffers


async def flood(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
    writer.write(SSE_HEAD)
    for n in range(EVENTS):
        writer.write(event(log(f"{n} {PAYLOAD}")))
        await writer.drain()  # a proxy that stops reading stops this server here
    writer.write(event(result(message["id"])) + b"0\r\n\r\n")


async def test_a_streaming_server_is_held_back_while_stdout_is_not_read() -> None:
    with anyio.fail_after(20):
        async with proxied(Server(flood), gated=True) as (stdio, _, lane):
            await stdio.write(call(1))
            # the lane stops taking from the connection, which stops reading its socket: nothing moves then
            await until(lambda: any(conn.paused or conn.complete for conn in lane._held))
            bound = lane._max_queued + 1024 * 1024  # past the mark: at most one connection's read more
            assert lane.most_queued <= bound, lane.most_queued
            assert not stdio.out  # the first write still waits
            stdio.release.set()
            at = await stdio.answer_at(1)
            logs = [m["params"]["data"].split()[0] for m in stdio.out if m.get("method")]
            assert logs == [str(n) for n in range(EVENTS)]  # every event, in order, then the answer
            assert at == EVENTS
            assert lane.most_queued <= bound
            assert lane.queued == 0


async def test_a_resumed_stream_does_not_overtake_what_the_lane_still_writes() -> None:
    script = Resumed()
    server = Server(script.first, script.resume)
    with anyio.fail_after(10):
        async with proxied(server, gated=True) as (stdio, _, lane):
            transport = lane._transport
            taken = record_take_overs(transport)
            await stdio.write(call(7))
            await until(lambda: lane.handed_over == 1)
            # the logs wait behind stdout: the transport resumes the stream only once they are written
            assert taken == []
            stdio.release.set()
            at = await stdio.answer_at(7)
            assert [m["params"]["data"] for m in stdio.out[:at]] == ["one", "two"]
            assert taken == [7]
            assert server.resumed == 1


async def test_a_connection_made_while_the_lane_closes_is_closed_too() -> None:
    closed = anyio.Event()

    async def never(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        raise AssertionError("nothing is posted")

    class Watching(Server):
        async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await super().handle(reader, writer)
            closed.set()

    with anyio.fail_after(10):
        async with proxied(Watching(never), gated=True) as (_, _, lane):
            closed = anyio.Event()  # the connections of the handshake are the transport's, not watched
            lane.close()  # as at shutdown, while a request's connection was being made
            with pytest.raises(httpx.ConnectError):
                await lane._connect()
            assert lane._open == 0
            await closed.wait()  # the server saw it closed


async def test_a_json_answer_past_the_connections_read_mark_is_read_whole() -> None:
    text = "x" * 1_000_000  # past the 256 KiB a lean connection holds unread before pausing its socket

    async def big(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        answer = {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {"content": [{"type": "text", "text": text}]},
        }
        out = json.dumps(answer).encode()
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(out)
        writer.write(head + out)

    with anyio.fail_after(10):
        async with proxied(Server(big), gated=True) as (stdio, _, lane):
            stdio.release.set()
            await stdio.write(call(3))
            at = await stdio.answer_at(3)
            assert stdio.out[at]["result"]["content"][0]["text"] == text
            assert lane.posted == 1
            assert lane.handed_over == 0
