"""Streamable HTTP server in process (httpx ASGI transport): sessions, versions, JSON/SSE, batches, eras."""

from __future__ import annotations

import base64
import json

import anyio
import pytest

from mcpframe import jsonrpc
from mcpframe.http.events import split_event_id

from ._server_support import (
    JSON_AND_SSE,
    MODERN,
    answer,
    asgi_client,
    call,
    init_body,
    initialize,
    messages,
    modern_meta,
    session_headers,
    sse_events,
)

pytestmark = pytest.mark.anyio

PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}


async def test_initialize_issues_a_session_id_and_initialized_gets_202() -> None:
    async with asgi_client() as (client, http):
        response = await client.post("/mcp", json=init_body(), headers=JSON_AND_SSE)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["result"]["protocolVersion"] == "2025-11-25"
        session_id = response.headers["mcp-session-id"]
        assert len(session_id) >= 32
        assert session_id.isascii()
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        ack = await client.post("/mcp", json=note, headers=session_headers(session_id))
        assert (ack.status_code, ack.content) == (202, b"")
        other = await initialize(client)
        assert other != session_id
        assert len(http.sessions.sessions) == 2


async def test_session_rules_missing_400_unknown_404_deleted_404() -> None:
    async with asgi_client() as (client, _):
        missing = await client.post("/mcp", json=PING, headers=JSON_AND_SSE)
        assert missing.status_code == 400
        assert missing.json()["error"]["code"] == jsonrpc.INVALID_REQUEST
        unknown = await client.post("/mcp", json=PING, headers=session_headers("nope"))
        assert unknown.status_code == 404
        session_id = await initialize(client)
        assert (await client.post("/mcp", json=PING, headers=session_headers(session_id))).status_code == 200
        assert (await client.delete("/mcp", headers=session_headers(session_id))).status_code == 200
        gone = await client.post("/mcp", json=PING, headers=session_headers(session_id))
        assert gone.status_code == 404
        assert (await client.delete("/mcp", headers=session_headers(session_id))).status_code == 404
        assert (await client.delete("/mcp", headers=JSON_AND_SSE)).status_code == 400
        assert (await client.get("/mcp", headers={"accept": "text/event-stream"})).status_code == 400


async def test_protocol_version_header() -> None:
    async with asgi_client() as (client, _):
        session_id = await initialize(client)
        headers = session_headers(session_id)
        bad = await client.post("/mcp", json=PING, headers={**headers, "mcp-protocol-version": "1999-01-01"})
        assert bad.status_code == 400
        assert "unsupported" in bad.json()["error"]["message"]
        older = await client.post(
            "/mcp", json=PING, headers={**headers, "mcp-protocol-version": "2025-03-26"}
        )
        assert older.status_code == 200  # any supported version is accepted on any session
        del headers["mcp-protocol-version"]
        assert (
            await client.post("/mcp", json=PING, headers=headers)
        ).status_code == 200  # absent: 2025-03-26


async def test_idle_sessions_are_reclaimed() -> None:
    async with asgi_client() as (client, http):
        session_id = await initialize(client)
        assert await http.sessions.reap() == 0
        http.sessions.idle_timeout = 0.0  # everything idle is now past its time
        assert await http.sessions.reap() == 1
        assert http.sessions.sessions == {}
        response = await client.post("/mcp", json=PING, headers=session_headers(session_id))
        assert response.status_code == 404


async def test_failed_initialize_keeps_no_session() -> None:
    async with asgi_client() as (client, http):
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": []}
        response = await client.post("/mcp", json=body, headers=JSON_AND_SSE)
        assert "error" in response.json()
        assert "mcp-session-id" not in response.headers
        assert http.sessions.sessions == {}


async def test_auto_mode_answers_json_unless_the_handler_streams() -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client))
        quick = await client.post("/mcp", json=call("echo", {"text": "hi"}), headers=headers)
        assert quick.headers["content-type"].startswith("application/json")
        assert quick.json()["result"]["content"][0]["text"] == "hi"
        chatty = await client.post("/mcp", json=call("chatty", progressToken="tok"), headers=headers)
        assert chatty.headers["content-type"].startswith("text/event-stream")
        got = messages(chatty.text)
        assert [m.get("method") for m in got] == [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
            None,
        ]
        assert got[0]["params"]["progressToken"] == "tok"
        assert got[-1]["id"] == 2
        assert got[-1]["result"]["content"][0]["text"] == "done"


async def test_resumable_mode_primes_every_stream_of_a_new_client() -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        response = await client.post("/mcp", json=call("echo", {"text": "x"}), headers=headers)
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.text)
        assert events[0]["data"] == ""
        assert events[0]["retry"] == "1000"
        assert "id" in events[0]
        assert json.loads(events[1]["data"])["result"]["content"][0]["text"] == "x"
        ids = [split_event_id(e["id"]) for e in events]
        assert ids[0] is not None
        assert ids[1] is not None
        assert ids[0][0] == ids[1][0]
        assert ids[0][1] < ids[1][1]


async def test_old_clients_get_no_priming_event() -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client, "2025-06-18"), "2025-06-18")
        response = await client.post("/mcp", json=call("chatty"), headers=headers)
        events = sse_events(response.text)
        assert all(e.get("data") for e in events)
        assert not any("retry" in e for e in events)


async def test_json_only_clients_get_json() -> None:
    async with asgi_client() as (client, _):
        headers = {**session_headers(await initialize(client)), "accept": "application/json"}
        response = await client.post("/mcp", json=call("chatty"), headers=headers)
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["result"]["content"][0]["text"] == "done"


async def test_batches_only_in_2025_03_26_sessions() -> None:
    batch = [PING, {**PING, "id": 8}, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"x": 1}]
    async with asgi_client(response_mode="auto") as (client, _):
        old = session_headers(await initialize(client, "2025-03-26"), "2025-03-26")
        response = await client.post("/mcp", json=batch, headers=old)
        answers = response.json()
        assert sorted(a.get("id") or 0 for a in answers) == [0, 7, 8]
        assert any(a.get("error", {}).get("code") == jsonrpc.INVALID_REQUEST for a in answers)
        new = session_headers(await initialize(client))
        refused = await client.post("/mcp", json=batch, headers=new)
        assert refused.status_code == 400
        assert "batches are not supported" in refused.json()["error"]["message"]


async def test_parse_errors_and_bad_bodies() -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        broken = await client.post("/mcp", content=b"{nope", headers=headers)
        assert broken.status_code == 400
        assert broken.json()["error"]["code"] == jsonrpc.PARSE_ERROR
        pretty = json.dumps({**PING, "params": {"_meta": {"a": "b"}}}, indent=2).encode()
        assert answer(await client.post("/mcp", content=pretty, headers=headers))["result"] == {}
        plain = await client.post("/mcp", content=b"{}", headers={**headers, "content-type": "text/plain"})
        assert plain.status_code == 415
        refused = await client.post("/mcp", json=PING, headers={**headers, "accept": "text/html"})
        assert refused.status_code == 406


async def test_body_size_limit_is_413_with_a_jsonrpc_error() -> None:
    async with asgi_client(max_body=200) as (client, _):
        body = init_body()
        body["params"]["padding"] = "x" * 500
        response = await client.post("/mcp", json=body, headers=JSON_AND_SSE)
        assert response.status_code == 413
        assert response.json()["error"]["code"] == jsonrpc.INVALID_REQUEST


async def test_cancelled_request_ends_its_stream_without_response() -> None:
    async with asgi_client(response_mode="auto", stream_after=60.0) as (client, http):
        headers = session_headers(await initialize(client))
        session = next(iter(http.sessions.sessions.values()))
        async with anyio.create_task_group() as tg:
            results: list[tuple[int, str, bytes]] = []

            async def slow_call() -> None:
                response = await client.post("/mcp", json=call("wait", rid=42), headers=headers)
                results.append((response.status_code, response.headers["content-type"], response.content))

            tg.start_soon(slow_call)
            with anyio.fail_after(5):
                await http.server.started.wait()  # type: ignore[attr-defined]
            assert session.router.busy(42)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}}
            assert (await client.post("/mcp", json=cancel, headers=headers)).status_code == 202
        # a request's POST is never 202 (for notifications and responses only): an SSE stream, ended empty
        assert results == [(200, "text/event-stream", b"")]
        with anyio.fail_after(5):
            await http.server.ended.wait()  # type: ignore[attr-defined]  # the handler was cancelled


# ------------------------------------------------------------------------------------------ 2026-07-28


def modern_headers(method: str = "tools/call", name: str | None = "echo") -> dict[str, str]:
    headers = {**JSON_AND_SSE, "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers


async def test_modern_requests_are_stateless() -> None:
    async with asgi_client() as (client, http):
        body = call("echo", {"text": "hey"}, **modern_meta())
        response = await client.post("/mcp", json=body, headers=modern_headers())
        assert response.status_code == 200
        assert "mcp-session-id" not in response.headers
        result = response.json()["result"]
        assert result["resultType"] == "complete"
        assert result["content"][0]["text"] == "hey"
        assert http.sessions.sessions == {}
        get = await client.get(
            "/mcp", headers={"accept": "text/event-stream", "mcp-protocol-version": MODERN}
        )
        assert get.status_code == 405


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"mcp-method": "tools/list"}, "Mcp-Method"),
        ({"mcp-name": "other"}, "Mcp-Name"),
        ({"mcp-protocol-version": "2025-11-25"}, "MCP-Protocol-Version"),
    ],
)
async def test_modern_header_mismatch_is_400_header_mismatch(change: dict[str, str], why: str) -> None:
    async with asgi_client() as (client, _):
        body = call("echo", {"text": "hey"}, **modern_meta())
        response = await client.post("/mcp", json=body, headers={**modern_headers(), **change})
        assert response.status_code == 400
        error = response.json()
        assert error["id"] == 2
        assert error["error"]["code"] == jsonrpc.HEADER_MISMATCH == -32020
        assert why in error["error"]["message"]


async def test_modern_name_header_in_base64_for_non_ascii() -> None:
    server_name = "échø"
    async with asgi_client() as (client, http):

        @http.server.tool(name=server_name)
        def accented() -> str:
            """Non-ASCII name."""
            return "ok"

        encoded = "=?base64?" + base64.b64encode(server_name.encode()).decode() + "?="
        body = call(server_name, **modern_meta())
        good = await client.post("/mcp", json=body, headers=modern_headers(name=encoded))
        assert good.json()["result"]["content"][0]["text"] == "ok"
        broken = await client.post("/mcp", json=body, headers=modern_headers(name="=?base64?***?="))
        assert broken.status_code == 400


async def test_finished_streams_are_forgotten() -> None:
    async with asgi_client(response_mode="auto") as (client, http):
        headers = session_headers(await initialize(client))
        session = next(iter(http.sessions.sessions.values()))
        for rid in range(20):
            await client.post("/mcp", json={**PING, "id": rid}, headers=headers)
            await client.post("/mcp", json=call("chatty", rid=100 + rid), headers=headers)
        with anyio.fail_after(5):
            while len(session.streams) > 1:  # exchanges finish their bookkeeping after the answer
                await anyio.sleep(0)
        assert list(session.streams.values()) == [session.get_stream]
        assert session.router.exchanges == {}
        assert session.router.owners == {}


async def test_modern_requests_ignore_session_ids_and_notifications_get_202() -> None:
    async with asgi_client() as (client, _):
        body = call("echo", {"text": "s"}, **modern_meta())
        headers = {**modern_headers(), "mcp-session-id": "stale"}
        assert (
            answer(await client.post("/mcp", json=body, headers=headers))["result"]["content"][0]["text"]
            == "s"
        )
        note = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        response = await client.post(
            "/mcp", json=note, headers=modern_headers("notifications/roots/list_changed")
        )
        assert response.status_code == 202


async def test_batch_requests_can_be_cancelled() -> None:
    async with asgi_client(response_mode="auto", stream_after=60.0) as (client, http):
        headers = session_headers(await initialize(client, "2025-03-26"), "2025-03-26")
        results: list[object] = []

        async def batch_call() -> None:
            response = await client.post("/mcp", json=[call("wait", rid=50), PING], headers=headers)
            results.append(response.json())

        async with anyio.create_task_group() as tg:
            tg.start_soon(batch_call)
            with anyio.fail_after(5):
                await http.server.started.wait()  # type: ignore[attr-defined]
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 50}}
            assert (await client.post("/mcp", json=cancel, headers=headers)).status_code == 202
        assert results == [[{"jsonrpc": "2.0", "id": 7, "result": {}}]]


async def test_session_limit_is_503() -> None:
    async with asgi_client(max_sessions=1) as (client, _):
        await initialize(client)
        response = await client.post("/mcp", json=init_body(), headers=JSON_AND_SSE)
        assert response.status_code == 503
        assert "mcp-session-id" not in response.headers
