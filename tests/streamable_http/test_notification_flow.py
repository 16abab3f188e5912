"""Flow control for a session's notifications: when its handlers fall behind, a client that keeps posting
notifications waits for its `202` (the server's queue stays bounded), and nothing is lost or reordered."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from mcpframe import jsonrpc
from mcpframe.http import sessions
from mcpframe.server.connection import ServerConnection
from mcpframe.session import SessionOptions

from ._server_support import asgi_client, call, initialize, make_server, session_headers

pytestmark = pytest.mark.anyio

LIMIT = 2_000
"""The notification queue's bound in bytes for this test (the default is 1 MiB)."""


async def test_a_notification_flood_waits_for_slow_handlers_and_nothing_is_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sessions, "NOTIFICATIONS_QUEUED", LIMIT)
    monkeypatch.setattr(sessions, "NOTIFICATION_WAIT", 600.0)  # the poster waits as long as the test needs
    gate = anyio.Event()
    seen: list[int] = []

    async def slow(self: ServerConnection, message: Any) -> None:
        if message.method == "notifications/roots/list_changed":
            await gate.wait()  # the first one holds the handler until the test lets it go
            seen.append(message.params["n"])

    monkeypatch.setattr(ServerConnection, "handle_notification", slow)
    # More than the Session's own backlog of notification jobs (max_in_flight, 1,024) and the queue's bound.
    total = 1_200
    acks: list[int] = []
    async with asgi_client() as (client, http):
        session_id = await initialize(client)
        headers = session_headers(session_id)
        transport = next(iter(http.sessions.sessions.values())).transport

        async def post_all() -> None:
            for n in range(total):
                note = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {"n": n}}
                reply = await client.post("/mcp", json=note, headers=headers)
                assert reply.status_code == 202, reply.text
                acks.append(n)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(post_all)
                while transport.queued + 100 <= LIMIT or len(acks) < 1_000:
                    await anyio.sleep(0)  # until the queue is full and the poster waits on it
                for _ in range(100):  # the poster is held: it gets no 202 while the handler waits
                    await anyio.sleep(0)
                held = len(acks)
                assert held < total
                assert transport.queued <= LIMIT
                gate.set()
            while len(seen) < total:  # the handlers catch up with what the 202s acknowledged
                await anyio.sleep(0)
    assert acks == list(range(total))
    assert held < total
    assert seen == list(range(total))  # every notification handled, in the order it was posted


async def test_a_hung_notification_handler_gets_posts_a_503_and_its_session_is_still_reaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sessions, "NOTIFICATIONS_QUEUED", LIMIT)
    monkeypatch.setattr(sessions, "NOTIFICATION_WAIT", 0.05)
    hung = anyio.Event()  # never set: the first list_changed holds the session's handler for good

    async def stuck(self: ServerConnection, message: Any) -> None:
        if message.method == "notifications/roots/list_changed":
            await hung.wait()

    monkeypatch.setattr(ServerConnection, "handle_notification", stuck)
    async with asgi_client(idle_timeout=0.2) as (client, http):  # the reaper's rounds: every 0.05 s
        http.sessions.idle_timeout = None  # no reaping while the test POSTs: a loaded box can pause > 0.2 s
        session_id = await initialize(client)
        headers = session_headers(session_id)
        with anyio.fail_after(60):
            statuses: list[int] = []
            n = 0
            while 503 not in statuses:  # the handler's backlog, then the queue, fill up; then a POST waits
                note = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {"n": n}}
                reply = await client.post("/mcp", json=note, headers=headers)
                statuses.append(reply.status_code)
                n += 1
            refused = reply
            assert set(statuses) == {202, 503}
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["code"] == jsonrpc.INTERNAL_ERROR
            assert "notification handlers are behind" in refused.json()["error"]["message"]
            http.sessions.idle_timeout = 0.2
            while http.sessions.sessions:  # no POST holds it open: the idle reaper ends it
                await anyio.sleep(0.05)


def _list_changed(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {"n": n}}


async def test_a_batch_of_notifications_refused_for_room_delivered_none_so_its_retry_duplicates_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sessions, "NOTIFICATIONS_QUEUED", LIMIT)
    # the posts that fill the queue wait as long as the reader needs: it drains the queue in its turns, and
    # on a loaded box a turn can come later than any short wait (a 503 there is the box, not the code)
    monkeypatch.setattr(sessions, "NOTIFICATION_WAIT", 600.0)
    gate = anyio.Event()
    seen: list[int] = []

    async def held(self: ServerConnection, message: Any) -> None:
        if message.method == "notifications/roots/list_changed":
            await gate.wait()
            seen.append(message.params["n"])

    monkeypatch.setattr(ServerConnection, "handle_notification", held)
    jobs = SessionOptions().max_in_flight  # the main Session's bound on notification jobs
    async with asgi_client() as (client, http):
        headers = session_headers(await initialize(client, "2025-03-26"), "2025-03-26")
        transport = next(iter(http.sessions.sessions.values())).transport

        async def post(n: int) -> None:
            reply = await client.post("/mcp", json=_list_changed(n), headers=headers)
            assert reply.status_code == 202, reply.text

        with anyio.fail_after(60):
            # one job runs (held), `jobs` wait for it, the next one waits in the Session's backlog: then
            # it reads no more, and what is posted stays in the queue
            filled = jobs + 2
            for n in range(filled):
                await post(n)
            while transport.queued:
                await anyio.sleep(0)
            while transport.queued < LIMIT // 2:  # the queue fills: room for some of the batch, not all
                await post(filled)
                filled += 1
            room = LIMIT - transport.queued
            batch = [_list_changed(n) for n in range(filled, filled + 40)]
            assert len(json.dumps(batch)) > room  # some of the batch would fit, not all of it
            # the handler is held and the Session reads no more: no room can come, the short wait runs out
            monkeypatch.setattr(sessions, "NOTIFICATION_WAIT", 0.05)
            refused = await client.post("/mcp", json=batch, headers=headers)
            assert refused.status_code == 503, refused.text
            assert refused.headers["retry-after"] == "1"
            assert LIMIT - transport.queued == room  # nothing of the refused batch was queued
            monkeypatch.setattr(sessions, "NOTIFICATION_WAIT", 600.0)
            gate.set()
            retried = await client.post("/mcp", json=batch, headers=headers)  # the client's retry
            assert retried.status_code == 202, retried.text
            while len(seen) < filled + len(batch):
                await anyio.sleep(0)
            for _ in range(100):  # anything delivered twice would be handled by now
                await anyio.sleep(0)
    assert seen == list(range(filled + len(batch)))  # each once, in the order posted


async def test_a_batch_refused_for_its_requests_routed_none_of_its_notifications(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []

    async def record(self: ServerConnection, message: Any) -> None:
        if message.method == "notifications/roots/list_changed":
            seen.append(message.params["n"])

    monkeypatch.setattr(ServerConnection, "handle_notification", record)
    server = make_server()
    async with asgi_client(server, max_in_flight=1, max_queued=0) as (client, _):
        headers = session_headers(await initialize(client, "2025-03-26"), "2025-03-26")
        batch = [_list_changed(0), call("echo", {"text": "b"}, rid=8)]
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                waiting: list[httpx.Response] = []

                async def hold_the_only_slot() -> None:
                    waiting.append(await client.post("/mcp", json=call("wait", rid=7), headers=headers))

                tg.start_soon(hold_the_only_slot)
                await server.started.wait()  # type: ignore[attr-defined]
                refused = await client.post("/mcp", json=batch, headers=headers)
                assert refused.status_code == 503, refused.text
                server.gate.set()  # type: ignore[attr-defined]
            assert waiting[0].status_code == 200
            retried = await client.post("/mcp", json=batch, headers=headers)  # the client's retry
            assert retried.status_code == 200, retried.text
            assert [a["id"] for a in retried.json()] == [8]
            marker = await client.post("/mcp", json=_list_changed(1), headers=headers)
            assert marker.status_code == 202
            while 1 not in seen:  # handled in order: the batch's notification, if routed, is in by now
                await anyio.sleep(0)
    assert seen == [0, 1]
