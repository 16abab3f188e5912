"""`proxy_remote` between in-memory byte transports: what follows a handshake-era `initialize` waits for its
answer (in order, bounded), nothing waits in the 2026-07-28 era, and at the end every request read gets an
answer: the server's, or an error once the grace ran out or the server's side ended."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from tests._blocked import all_blocked
from tests.proxy.test_remote_flow import Side

from mcpframe import core
from mcpframe.proxy.remote import proxy_remote

pytestmark = pytest.mark.anyio

STAMP = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}


def frame(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def initialize(params: dict[str, Any] | None = None) -> bytes:
    return frame(
        {"id": "init", "method": "initialize", "params": params or {"protocolVersion": "2025-11-25"}}
    )


INITIALIZED = frame({"method": "notifications/initialized"})


def call(rid: Any, params: dict[str, Any] | None = None) -> bytes:
    return frame({"id": rid, "method": "tools/call", "params": {"name": "t", **(params or {})}})


def sent(side: Side) -> list[Any]:
    return [json.loads(f).get("id", json.loads(f).get("method")) for f in side.sent]


async def test_what_follows_initialize_waits_for_its_answer_in_order() -> None:
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server))
            await client.incoming_send.send(initialize() + INITIALIZED + call(1) + frame({"method": "n/x"}))
            await client.incoming_send.send(call(2))  # read while held: held too, behind the others
            await server.wait_for(1)
            await all_blocked()
            assert sent(server) == ["init"]  # no session yet: nothing else goes
            await server.incoming_send.send(core.encode_result("init", {"protocolVersion": "2025-11-25"}))
            await server.wait_for(5)
            assert sent(server) == ["init", "notifications/initialized", 1, "n/x", 2]
            await client.incoming_send.send(call(3))  # the session runs: at once
            await server.wait_for(6)
            for rid in (1, 2, 3):
                await server.incoming_send.send(core.encode_result(rid, {}))
            await client.wait_for(4)
            client.incoming_send.close()
    assert [json.loads(line)["id"] for line in client.sent] == ["init", 1, 2, 3]


async def test_a_refused_initialize_lets_what_it_held_go() -> None:
    """An error answer (a 401 the transport made an answer of) ends the wait too: the frames go, in order,
    and meet the server's own refusal (the proxy invents nothing)."""
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server))
            await client.incoming_send.send(initialize() + INITIALIZED + call(1))
            await server.wait_for(1)
            await server.incoming_send.send(core.encode_error("init", -32000, "HTTP 401 from the server"))
            await server.wait_for(3)
            assert sent(server) == ["init", "notifications/initialized", 1]
            await server.incoming_send.send(core.encode_error(1, -32000, "HTTP 401 from the server"))
            await client.wait_for(2)
            client.incoming_send.close()


async def test_holding_is_bounded_stdin_is_not_read_past_it() -> None:
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server, max_backlog=2))
            await client.incoming_send.send(initialize())
            for rid in range(1, 6):
                await client.incoming_send.send(call(rid))  # one read each
            await server.wait_for(1)
            await all_blocked()
            assert client.incoming.statistics().current_buffer_used == 3  # 2 held: no more read
            await server.incoming_send.send(core.encode_result("init", {}))
            await server.wait_for(6)
            assert sent(server) == ["init", 1, 2, 3, 4, 5]
            tg.cancel_scope.cancel()


async def test_nothing_waits_in_the_2026_era() -> None:
    """Stamped messages (2026-07-28) have no session to wait for: they go at once, even after a stamped
    `initialize` (a client probing), as do the requests of a plain `server/discover` opener."""
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server))
            discover = frame({"id": "d", "method": "server/discover", "params": STAMP})
            await client.incoming_send.send(discover + call(1, STAMP) + initialize(STAMP) + call(2, STAMP))
            await server.wait_for(4)
            assert sent(server) == ["d", 1, "init", 2]
            tg.cancel_scope.cancel()


async def test_end_of_input_waits_for_the_handshake_then_drains() -> None:
    """The client's input ends while frames wait for the `initialize`'s answer: they still go once it came,
    and their answers are written before the proxy ends."""
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server, drain_timeout=60))
            await client.incoming_send.send(initialize() + INITIALIZED + call(1))
            client.incoming_send.close()
            await server.wait_for(1)
            await server.incoming_send.send(core.encode_result("init", {}))
            await server.wait_for(3)
            await server.incoming_send.send(core.encode_result(1, {}))
    assert [json.loads(line)["id"] for line in client.sent] == ["init", 1]


async def test_past_the_grace_every_request_read_gets_an_error() -> None:
    """No answer within `drain_timeout` of the end of input: the requests in flight, waiting for room and
    held for the handshake each get a -32000 answer saying so; a cancelled request gets none."""
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server, max_in_flight=2, drain_timeout=0.05))
            cancel = frame({"method": "notifications/cancelled", "params": {"requestId": 2}})
            await client.incoming_send.send(call(1) + call(2) + call(3) + cancel + initialize() + call(4))
            await server.wait_for(3)  # 1, 2 and the cancel of 2 (then 3; `initialize` waits for room)
            client.incoming_send.close()
    errors = {json.loads(line)["id"]: json.loads(line)["error"] for line in client.sent}
    assert sorted(errors, key=str) == [1, 3, 4, "init"]
    assert errors[1]["code"] == -32000
    assert "within 0.05 s after stdin ended" in errors[1]["message"]


async def test_when_the_server_side_ends_the_requests_in_flight_get_an_error() -> None:
    client, server = Side(), Side()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: proxy_remote(client, server))
            await client.incoming_send.send(call(1) + call(2))
            await server.wait_for(2)
            await server.incoming_send.send(core.encode_result(1, {}))
            await client.wait_for(1)
            server.incoming_send.close()  # the remote transport ended
            await client.wait_for(2)
            client.incoming_send.close()
    first, second = (json.loads(line) for line in client.sent)
    assert first == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert second["id"] == 2
    assert "ended before the answer" in second["error"]["message"]
