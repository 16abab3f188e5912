"""`proxy_remote` between two in-memory byte transports: the in-flight bound, bad frames, end of input."""

from __future__ import annotations

import json

import anyio
import pytest
from tests._blocked import all_blocked

from mcpframe import core
from mcpframe.proxy.remote import proxy_remote

pytestmark = pytest.mark.anyio


class Side:
    """A byte transport fed by the test (`incoming`) that records what it is sent (`sent`)."""

    def __init__(self) -> None:
        self.incoming_send, self.incoming = anyio.create_memory_object_stream[bytes](100)
        self.sent: list[bytes] = []
        self.changed = anyio.Event()

    async def receive(self) -> bytes:
        try:
            return await self.incoming.receive()
        except anyio.EndOfStream:
            return b""

    async def send(self, data: bytes) -> None:
        self.sent += [line + b"\n" for line in data.splitlines() if line]
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_for(self, count: int) -> None:
        while len(self.sent) < count:
            await self.changed.wait()


def request(rid: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode() + b"\n"


async def test_no_more_than_the_bound_is_in_flight_and_answers_free_room() -> None:
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server, max_in_flight=3))
            await client.incoming_send.send(b"".join(request(i) for i in range(1, 8)) + b"{broken\n")
            await server.wait_for(3)
            await all_blocked()
            assert len(server.sent) == 3  # the 4th waits for an answer, with the 5th to 7th
            await client.incoming_send.send(request(8))
            await all_blocked()
            assert client.incoming.statistics().current_buffer_used == 1  # 4 wait (>= 3): stdin not read
            await server.incoming_send.send(core.encode_result(1, {}))
            await server.wait_for(4)
            await all_blocked()
            assert len(server.sent) == 4
            for rid in range(2, 9):
                await server.incoming_send.send(core.encode_result(rid, {}))
            await client.wait_for(9)
            client.incoming_send.close()  # end of input: nothing is in flight, the proxy ends
    answers = [json.loads(line) for line in client.sent]
    assert [a["id"] for a in answers if "result" in a] == list(range(1, 9))
    (broken,) = [a for a in answers if "error" in a]
    assert broken["error"]["code"] == -32700  # answered by the proxy, never sent on
    assert all(b"broken" not in frame for frame in server.sent)


def call(rid: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call"}).encode() + b"\n"


async def test_answers_and_cancels_read_past_a_waiting_request_go_at_once() -> None:
    """The bound reached: the requests read after it wait, in order, but stdin is still read, and the client's
    answers to the server's requests (which the tools in flight wait for) and its cancels go on at once."""
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server, max_in_flight=2, max_backlog=4))
            await client.incoming_send.send(call(1) + call(2) + call(3) + call(4) + call(5))
            await server.wait_for(2)
            for ask in ("s1", "s2"):  # both tools in flight ask the client something
                await server.incoming_send.send(core.encode_request(ask, "sampling/createMessage", {}))
            await client.wait_for(2)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}
            reply = core.encode_result("s1", {}) + core.encode_result("s2", {}) + json.dumps(cancel).encode()
            await client.incoming_send.send(reply + b"\n")
            await server.wait_for(4)  # the answers, though calls 3..5 wait for room
            await all_blocked()
            assert [json.loads(f).get("id") for f in server.sent] == [1, 2, "s1", "s2"]
            await server.incoming_send.send(core.encode_result(1, {}))
            await server.incoming_send.send(core.encode_result(2, {}))
            await server.wait_for(6)  # 3, then 5: 4 was cancelled while it waited, so never sent
            await server.incoming_send.send(core.encode_result(3, {}) + core.encode_result(5, {}))
            await client.wait_for(6)
            client.incoming_send.close()
    assert [json.loads(f).get("id") for f in server.sent] == [1, 2, "s1", "s2", 3, 5]
    answered = [json.loads(line)["id"] for line in client.sent if b'"result"' in line]
    assert answered == [1, 2, 3, 5]  # the cancelled request is not answered


async def test_requests_waiting_at_the_end_of_input_are_still_posted_and_answered() -> None:
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server, max_in_flight=1, drain_timeout=60))
            await client.incoming_send.send(call(1) + call(2) + call(3))
            client.incoming_send.close()  # end of input while 2 and 3 wait for room
            for rid in (1, 2, 3):
                await server.wait_for(rid)
                await server.incoming_send.send(core.encode_result(rid, {}))
            await client.wait_for(3)
    # the proxy ended on its own once everything read was answered (the task group did not hang)
    assert [json.loads(f)["id"] for f in server.sent] == [1, 2, 3]
    assert [json.loads(line)["id"] for line in client.sent] == [1, 2, 3]
