"""Flow control for a session's notifications: when its handlers fall behind, a client that keeps posting
notifications waits for its `202` (the server's queue stays bounded), and nothing is lost or reordered."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpframe import jsonrpc
from mcpframe.http import sessions
from mcpframe.server.connection import ServerConnection

from ._server_support import asgi_client, initialize, session_headers

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
    async with asgi_client(idle_timeout=0.2) as (client, http):
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
            while http.sessions.sessions:  # no POST holds it open: the idle reaper ends it
                await anyio.sleep(0.05)
