"""`proxy_remote` between two in-memory byte transports: the in-flight bound, bad frames, end of input."""

from __future__ import annotations

import json

import anyio
import pytest

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
            await anyio.wait_all_tasks_blocked()
            assert len(server.sent) == 3  # the 4th waits for an answer: stdin is not read meanwhile
            await server.incoming_send.send(core.encode_result(1, {}))
            await server.wait_for(4)
            await anyio.wait_all_tasks_blocked()
            assert len(server.sent) == 4
            for rid in range(2, 8):
                await server.incoming_send.send(core.encode_result(rid, {}))
            await client.wait_for(8)
            client.incoming_send.close()  # end of input: nothing is in flight, the proxy ends
    answers = [json.loads(line) for line in client.sent]
    assert [a["id"] for a in answers if "result" in a] == list(range(1, 8))
    (broken,) = [a for a in answers if "error" in a]
    assert broken["error"]["code"] == -32700  # answered by the proxy, never sent on
    assert all(b"broken" not in frame for frame in server.sent)
