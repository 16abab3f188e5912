"""Streamable HTTP server over a real uvicorn on 127.0.0.1: streams, resumption, server requests, GET."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from ._server_support import (
    JSON_AND_SSE,
    MODERN,
    EventReader,
    call,
    init_body,
    live_server,
    modern_meta,
    read_events,
    session_headers,
)

pytestmark = pytest.mark.anyio


async def start_session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    response = await client.post(url, json=init_body(), headers=JSON_AND_SSE)
    headers = session_headers(response.headers["mcp-session-id"])
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, json=note, headers=headers)).status_code == 202
    return headers


def data(event: dict[str, str]) -> Any:
    return json.loads(event["data"])


async def test_server_closes_quiet_streams_and_get_resumes_them() -> None:
    async with (
        live_server(close_idle_streams=0.05, retry_ms=10) as (url, server),
        httpx.AsyncClient() as client,
    ):
        headers = await start_session(client, url)
        with anyio.fail_after(10):
            async with client.stream("POST", url, json=call("wait", rid=5), headers=headers) as response:
                events = await read_events(response, 10)  # ends when the server closes the stream
        assert len(events) == 1
        assert events[0]["data"] == ""
        assert events[0]["retry"] == "10"
        server.gate.set()  # type: ignore[attr-defined]
        resume = {**headers, "accept": "text/event-stream", "last-event-id": events[0]["id"]}
        with anyio.fail_after(10):
            async with client.stream("GET", url, headers=resume) as response:
                assert response.status_code == 200
                replayed = await read_events(response, 1)
        assert data(replayed[0])["id"] == 5
        assert data(replayed[0])["result"]["content"][0]["text"] == "released"


async def test_abandoned_stream_keeps_running_and_is_replayed_on_resume() -> None:
    async with live_server() as (url, server), httpx.AsyncClient() as client:
        headers = await start_session(client, url)
        with anyio.fail_after(10):
            async with client.stream("POST", url, json=call("wait", rid=6), headers=headers) as response:
                priming = (await read_events(response, 1))[0]
            await server.started.wait()  # type: ignore[attr-defined]
        server.gate.set()  # type: ignore[attr-defined]
        with anyio.fail_after(10):
            await server.ended.wait()  # type: ignore[attr-defined]
        resume = {**headers, "accept": "text/event-stream", "last-event-id": priming["id"]}
        with anyio.fail_after(10):
            async with client.stream("GET", url, headers=resume) as response:
                replayed = await read_events(response, 5)
        assert [data(e)["id"] for e in replayed] == [6]
        other = await start_session(client, url)
        foreign = await client.get(url, headers={**other, "accept": "text/event-stream", **_last(priming)})
        assert foreign.status_code == 404  # event ids are scoped to their session
        unknown = await client.get(
            url, headers={**headers, "accept": "text/event-stream", "last-event-id": "x"}
        )
        assert unknown.status_code == 404


def _last(event: dict[str, str]) -> dict[str, str]:
    return {"last-event-id": event["id"]}


async def test_sampling_round_trip_on_the_calls_own_stream() -> None:
    async with live_server() as (url, _), httpx.AsyncClient() as client:
        headers = await start_session(client, url)

        async def ask(rid: int, word: str, seen: list[int]) -> str:
            async with client.stream(
                "POST", url, json=call("ask", {"prompt": word}, rid=rid), headers=headers
            ) as r:
                async for event in _messages(r):
                    if event.get("method") == "sampling/createMessage":
                        seen.append(event["id"])
                        text = event["params"]["messages"][0]["content"]["text"].upper()
                        result = {
                            "role": "assistant",
                            "content": {"type": "text", "text": text},
                            "model": "m",
                        }
                        reply = {"jsonrpc": "2.0", "id": event["id"], "result": result}
                        pretty = json.dumps(reply, indent=rid % 3)  # pretty-printed bodies are fine too
                        assert (await client.post(url, content=pretty, headers=headers)).status_code == 202
                    elif event.get("id") == rid:
                        return str(event["result"]["content"][0]["text"])
            raise AssertionError("no response")

        seen: list[int] = []
        answers: dict[int, str] = {}
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for rid, word in ((11, "one"), (12, "two")):
                    tg.start_soon(lambda r=rid, w=word: _store(answers, r, ask(r, w, seen)))
        assert answers == {11: "ONE", 12: "TWO"}
        assert len(set(seen)) == 2  # server request ids are unique in the session


async def _store(into: dict[int, str], key: int, value: Any) -> None:
    into[key] = await value


async def _messages(response: httpx.Response) -> Any:
    event: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if event.get("data"):
                yield json.loads(event["data"])
            event = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            event[name] = value.removeprefix(" ")


async def test_get_stream_carries_list_changes_and_is_single() -> None:
    async with live_server() as (url, server), httpx.AsyncClient() as client:
        headers = {**await start_session(client, url), "accept": "text/event-stream"}
        with anyio.fail_after(10):
            async with client.stream("GET", url, headers=headers) as response:
                assert response.status_code == 200
                reader = EventReader(response)
                first = await reader.read(1)  # the priming event
                assert first[0]["data"] == ""
                second = await client.get(url, headers=headers)
                assert second.status_code == 409

                @server.tool
                def added() -> str:
                    """Appears after start."""
                    return "new"

                changed = await reader.read(1)
        assert data(changed[0])["method"] == "notifications/tools/list_changed"


async def test_modern_stream_abandoned_cancels_the_handler() -> None:
    async with live_server(stream_after=0.0) as (url, server), httpx.AsyncClient() as client:
        headers = {
            **JSON_AND_SSE,
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": "wait",
        }
        with anyio.fail_after(10):
            async with client.stream("POST", url, json=call("wait", **modern_meta()), headers=headers) as r:
                assert r.headers["content-type"].startswith("text/event-stream")
                assert "mcp-session-id" not in r.headers
                await server.started.wait()  # type: ignore[attr-defined]
            await server.ended.wait()  # type: ignore[attr-defined]  # cancelled: nobody can get the answer
        assert not server.gate.is_set()  # type: ignore[attr-defined]


async def test_get_stream_resumes_what_it_missed() -> None:
    async with live_server() as (url, server), httpx.AsyncClient() as client:
        headers = {**await start_session(client, url), "accept": "text/event-stream"}
        with anyio.fail_after(10):
            async with client.stream("GET", url, headers=headers) as response:
                priming = (await read_events(response, 1))[0]

            @server.tool
            def later() -> str:
                """Added while the GET stream was away."""
                return "later"

            async with client.stream("GET", url, headers={**headers, **_last(priming)}) as response:
                missed = await read_events(response, 1)
        assert data(missed[0])["method"] == "notifications/tools/list_changed"


async def test_delete_cancels_running_requests() -> None:
    async with live_server(stream_after=0.0) as (url, server), httpx.AsyncClient() as client:
        headers = await start_session(client, url)
        with anyio.fail_after(10):
            async with client.stream("POST", url, json=call("wait", rid=9), headers=headers) as response:
                reader = EventReader(response)
                await server.started.wait()  # type: ignore[attr-defined]
                assert (await client.delete(url, headers=headers)).status_code == 200
                await server.ended.wait()  # type: ignore[attr-defined]
                rest = await reader.read(10)  # the stream ends without an answer
        assert all(e.get("data") == "" for e in rest)
