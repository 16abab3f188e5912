"""The remote proxy and a client's `notifications/cancelled`: once the proxy read the cancel of a request in
flight, the cancel is posted to the server and no answer to that request is written to the client, on the
fast lane and on the transport's full path; a request the lane had not posted yet is never posted, and a
stream queued for the transport to resume is not resumed. Against a scripted in-process HTTP server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from tests.proxy._remote_support import (
    SSE_HEAD,
    Answer,
    GatedStdio,
    Resumed,
    Server,
    call,
    event,
    proxied,
    record_take_overs,
    result,
    sse_answer,
    until,
)

from mcpframe import core

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


def cancel(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}


def answers(stdio: GatedStdio, rid: Any) -> list[dict[str, Any]]:
    return [m for m in stdio.out if m.get("id") == rid and "method" not in m]


async def test_a_stream_queued_to_be_resumed_is_not_resumed_once_its_request_is_cancelled() -> None:
    script = Resumed()  # two logs, the stream ends without the answer; resumed, it sends the answer

    async def first(message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        if message["id"] == 7:
            await script.first(message, headers, writer)
        else:
            writer.write(SSE_HEAD + event(result(message["id"])) + b"0\r\n\r\n")

    server = Recording(first, script.resume)
    with anyio.fail_after(10):
        async with proxied(server) as (stdio, remote, _):
            transport = remote.streamable
            lane = transport.lane
            taken = record_take_overs(transport)
            stdio.gated = True  # the logs wait behind stdout: the resume waits behind them (its order)
            await stdio.write(call(7))
            await until(lambda: lane.handed_over == 1)
            await stdio.write(cancel(7))
            await until(lambda: server.cancels == [7])
            stdio.release.set()
            await until(lambda: len(stdio.out) >= 2)  # the writer wrote, then handed its queue on
            assert [m["params"]["data"] for m in stdio.out[:2]] == ["one", "two"]
            assert taken == []  # the cancelled request's stream is not resumed
            await stdio.write(call(8))
            await stdio.answer(8)
            assert server.resumed == 0
            assert taken == []
    assert not answers(stdio, 7)  # not even the transport's "the server's answer did not include it"


@pytest.mark.parametrize("lane_on", [True, False], ids=["lane", "full-path"])
async def test_an_answer_crossing_the_cancel_is_not_written(lane_on: bool) -> None:
    cancelled = anyio.Event()
    answered = anyio.Event()

    async def after_the_cancel(
        message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter
    ) -> None:
        if message["id"] == 9:  # answered once the cancel came (it finished first), before the 202
            await cancelled.wait()
            out = json.dumps(result(9)).encode()
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
            writer.write(head % len(out) + out)
            await writer.drain()
            answered.set()
        else:
            writer.write(SSE_HEAD + event(result(message["id"])) + b"0\r\n\r\n")

    server = Recording(after_the_cancel)
    with anyio.fail_after(10):
        async with proxied(server, max_open=64 if lane_on else None) as (stdio, remote, _):
            transport = remote.streamable

            async def ack_once_the_answer_is_read() -> None:
                cancelled.set()
                await answered.wait()
                # the proxy read the answer while the cancel's POST still waits for its 202
                await until(lambda: 9 not in transport.lane._busy if lane_on else transport.in_flight == 0)
                for _ in range(10):  # and has had turns to write it
                    await anyio.sleep(0)

            server.before_202 = ack_once_the_answer_is_read
            await stdio.write(call(9))
            await until(lambda: server.requests == [9])
            await stdio.write(cancel(9))
            await stdio.write(call(10))
            await stdio.answer(10)  # read after the cancel was posted: anything of 9 came before it
            assert server.cancels == [9]
    assert not answers(stdio, 9)


async def test_an_answer_the_lane_queued_but_did_not_write_yet_is_not_written_once_cancelled() -> None:
    server = Recording(sse_answer)
    with anyio.fail_after(10):
        async with proxied(server) as (stdio, remote, _):
            lane = remote.streamable.lane
            stdio.gated = True  # the writer holds the answer to 10 until the test releases stdout
            await stdio.write(call(10))
            await until(lambda: 10 not in lane._answered and lane.queued > 0)  # being written
            await stdio.write(call(11))
            await until(lambda: 11 in lane._answered)  # queued behind it
            await stdio.write(cancel(11))
            await until(lambda: server.cancels == [11])
            stdio.release.set()
            await stdio.answer(10)
            await stdio.write(call(12))
            await stdio.answer(12)
            assert lane.queued == 0
    assert not answers(stdio, 11)


async def test_a_lane_request_withdrawn_while_it_waits_for_a_connection_is_never_posted() -> None:
    held = anyio.Event()

    async def hold_the_first(
        message: dict[str, Any], headers: dict[str, str], writer: asyncio.StreamWriter
    ) -> None:
        if message["id"] == 1:
            await held.wait()
        writer.write(SSE_HEAD + event(result(message["id"])) + b"0\r\n\r\n")

    server = Recording(hold_the_first)
    with anyio.fail_after(10):
        async with proxied(server, max_open=1) as (stdio, remote, _), anyio.create_task_group() as tg:
            lane = remote.streamable.lane
            await stdio.write(call(1))  # takes the lane's only connection
            await until(lambda: server.requests == [1])
            (second,) = core.decode(json.dumps(call(2)).encode(), lazy=True)
            tg.start_soon(lane.post, second)  # as the proxy's backlog posts: stdin is read meanwhile
            await until(lambda: 2 in lane._posting)
            lane.withdraw(2)  # what the proxy does when it reads the cancel, before posting it
            held.set()
            await stdio.answer(1)
            await stdio.write(call(3))
            await stdio.answer(3)
            assert server.requests == [1, 3]  # 2 never reached the server
            assert lane.posted == 2


async def test_a_cancel_naming_no_valid_id_is_passed_on_and_the_proxy_goes_on() -> None:
    server = Recording(sse_answer)
    with anyio.fail_after(10):
        async with proxied(server) as (stdio, _, _):
            for hostile in ([1], {"a": 1}, None, 1.5):
                await stdio.write(cancel(hostile))
            await stdio.write(call(4))
            await stdio.answer(4)
            assert server.cancels == [[1], {"a": 1}, None, 1.5]
