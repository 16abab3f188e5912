"""`mcpframe proxy --listen --multiplex shared`: handshake-era sessions over one child (the scripted peer).

The peer counts its `initialize`s and answers `echo` with its params and that count, so a test sees that one
child, initialized once, serves every session; ids, progress tokens, cancels and the peer's own requests are
followed from session to child and back.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import JSON_ONLY, rpc
from tests.proxy._shared_support import (
    call,
    get_stream,
    initialize,
    shared_proxy,
    slow_in_flight,
    sse_post,
    until,
)
from tests.proxy.conftest import PEER

pytestmark = pytest.mark.anyio


async def test_three_sessions_share_one_child_initialized_once_with_their_own_ids() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        sessions = [(await initialize(http, proxy.url))[0] for _ in range(3)]
        with anyio.fail_after(20):
            answers: dict[tuple[int, int], Any] = {}

            async def one(n: int, rid: int) -> None:
                answers[n, rid] = await call(
                    http, proxy.url, sessions[n], rpc(rid, "echo", {"who": [n, rid]})
                )

            async with anyio.create_task_group() as tg:
                for rid in (1, 2, 3):  # every session uses the same ids, all in flight together
                    for n in range(3):
                        tg.start_soon(one, n, rid)
            pids = {(await call(http, proxy.url, s, rpc(9, "pid")))["result"]["pid"] for s in sessions}
        for (n, rid), answer in answers.items():
            assert answer["id"] == rid
            assert answer["result"] == {"params": {"who": [n, rid]}, "initializations": 1}
        assert len(pids) == 1
        assert proxy.app.pool.spawned == 1
        assert proxy.app.fast.taken == 12  # every call by the fast lane (plain calls of JSON-only clients)


async def test_a_log_line_during_a_fast_call_moves_it_to_the_full_path_with_its_answer() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        log = ["notifications/message", {"level": "info", "data": "for a"}]
        with anyio.fail_after(20):
            await call(http, proxy.url, b, rpc(1, "echo"))
            messages = await sse_post(http, proxy.url, a, rpc(1, "notify", {"notifications": [log]}))
        assert proxy.app.fast.taken == 2
        assert messages == [
            {"jsonrpc": "2.0", "method": "notifications/message", "params": log[1]},
            {"jsonrpc": "2.0", "id": 1, "result": {}},
        ]


async def test_each_session_gets_its_own_version_within_the_childs() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        with anyio.fail_after(20):
            _, old = await initialize(http, proxy.url, "2025-03-26")
            _, future = await initialize(http, proxy.url, "2099-01-01")
        assert old["result"]["protocolVersion"] == "2025-03-26"
        # the peer echoes the version the proxy asked: the newest handshake-era one
        assert future["result"]["protocolVersion"] == "2025-11-25"
        assert old["result"]["serverInfo"] == {"name": "peer", "version": "1"}


async def test_progress_goes_to_the_session_that_named_the_token_with_its_token() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        got: dict[str, list[dict[str, Any]]] = {}

        async def one(name: str, headers: dict[str, str]) -> None:
            params = {"_meta": {"progressToken": 1}}  # both use token 1 (and id 1)
            got[name] = await sse_post(http, proxy.url, headers, rpc(1, "progress", params))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "a", a)
                tg.start_soon(one, "b", b)
    seen = set()
    for messages in got.values():
        *progress, answer = messages
        assert [m["params"] for m in progress] == [
            {"progressToken": 1, "progress": 1},
            {"progressToken": 1, "progress": 2},
        ]
        assert answer["id"] == 1
        seen.add(answer["result"]["token_seen"])
    assert len(seen) == 2  # the child saw two tokens (each request's id there), where the clients sent one


async def test_a_cancel_reaches_the_child_with_its_id_there() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        with anyio.fail_after(20):
            async with (
                get_stream(http, proxy.url, b) as b_events,
                slow_in_flight(http, proxy, a, 7) as (uid, answered),
            ):
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
                response = await http.post(proxy.url, json=cancel, headers={**JSON_ONLY, **a})
                assert response.status_code == 202
                # nothing waits now: the peer's report of the cancel goes to every session's GET stream
                report = await b_events.receive()
        assert report == {
            "jsonrpc": "2.0",
            "method": "test/cancelled",
            "params": {"requestId": uid, "known": True},
        }
        assert answered == [[]]  # the cancelled POST ends with nothing in it


async def test_a_request_of_the_child_goes_to_the_session_whose_call_asked_it() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b, c = [(await initialize(http, proxy.url))[0] for _ in range(3)]
        await call(http, proxy.url, a, rpc(1, "echo"))  # a and c are active, b's call comes last
        await call(http, proxy.url, c, rpc(1, "echo"))

        async def reply(message: dict[str, Any]) -> None:
            if message.get("method") == "roots/list":
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"roots": [{"uri": "file:///b"}]}}
                response = await http.post(proxy.url, json=answer, headers={**JSON_ONLY, **b})
                assert response.status_code == 202

        with anyio.fail_after(20):
            messages = await sse_post(http, proxy.url, b, rpc(5, "ask", {"method": "roots/list"}), reply)
        asked, answer = messages
        assert asked["method"] == "roots/list"
        assert answer == {"jsonrpc": "2.0", "id": 5, "result": {"answer": {"roots": [{"uri": "file:///b"}]}}}


async def test_list_changed_reaches_every_session_and_updates_only_subscribers() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        with anyio.fail_after(20):
            await call(http, proxy.url, b, rpc(1, "resources/subscribe", {"uri": "mem://x"}))
            async with get_stream(http, proxy.url, a) as a_events, get_stream(http, proxy.url, b) as b_events:
                notifications = [
                    ["notifications/resources/updated", {"uri": "mem://x"}],
                    ["notifications/tools/list_changed", {}],
                ]
                await call(http, proxy.url, a, rpc(2, "notify", {"notifications": notifications}))
                b_got = [await b_events.receive(), await b_events.receive()]
                a_got = await a_events.receive()
        assert [m["method"] for m in b_got] == [
            "notifications/resources/updated",
            "notifications/tools/list_changed",
        ]
        assert a_got["method"] == "notifications/tools/list_changed"  # not the update: a never subscribed


async def test_the_childs_death_fails_every_sessions_calls_and_the_next_call_restarts_it() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        with anyio.fail_after(20):
            first = (await call(http, proxy.url, a, rpc(1, "pid")))["result"]["pid"]
            answered: list[Any] = []

            async def slow() -> None:
                answered.append(await call(http, proxy.url, a, rpc(2, "slow")))

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await until(lambda: len(proxy.app.shared.ids) == 1)  # type: ignore[union-attr]
                crashed = await call(http, proxy.url, b, rpc(3, "crash", {"status": 3}))
            second = await call(http, proxy.url, b, rpc(4, "pid"))
            echoed = await call(http, proxy.url, a, rpc(5, "echo"))
        for answer, rid in ((answered[0], 2), (crashed, 3)):
            assert answer["id"] == rid
            assert answer["error"]["code"] == -32000
            assert "exited (status 3)" in answer["error"]["message"]
        assert second["result"]["pid"] != first
        assert echoed["result"]["initializations"] == 1  # the new child was initialized again, once
        assert proxy.app.pool.spawned == 2


async def test_a_deleted_session_has_its_calls_cancelled_at_the_child() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        with anyio.fail_after(20):
            async with (
                get_stream(http, proxy.url, b) as b_events,
                slow_in_flight(http, proxy, a, 2, sse=False) as (uid, answered),
            ):
                assert (await http.delete(proxy.url, headers=a)).status_code == 200
                report = await b_events.receive()
            after = await call(http, proxy.url, b, rpc(3, "echo"))
        assert report["params"] == {"requestId": uid, "known": True}
        assert answered[0]["error"]["code"] == -32000
        assert after["result"]["initializations"] == 1  # the child lives on for the other sessions


async def test_an_unsubscribe_reaches_the_child_only_when_the_last_subscriber_leaves() -> None:
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        subscribe = {"uri": "mem://x"}
        with anyio.fail_after(20):
            for headers in (a, b):
                await call(http, proxy.url, headers, rpc(1, "resources/subscribe", subscribe))
            kept = await call(http, proxy.url, a, rpc(2, "resources/unsubscribe", subscribe))
            still = [bridge.http.id for bridge in proxy.app.shared.subscribers["mem://x"]]  # type: ignore[union-attr]
            again = await call(http, proxy.url, a, rpc(3, "initialize", {"protocolVersion": "2025-11-25"}))
            async with get_stream(http, proxy.url, b) as b_events:
                update = [["notifications/resources/updated", subscribe]]
                await call(http, proxy.url, a, rpc(4, "notify", {"notifications": update}))
                got = await b_events.receive()
            last = await call(http, proxy.url, b, rpc(5, "resources/unsubscribe", subscribe))
        assert kept == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert still == [b["mcp-session-id"]]  # the child keeps the subscription: b still has it
        assert again["error"]["code"] == -32600
        assert got["params"] == subscribe
        assert proxy.app.shared.subscribers == {}  # type: ignore[union-attr]
        assert last == {"jsonrpc": "2.0", "id": 5, "result": {}}  # the peer's own answer
