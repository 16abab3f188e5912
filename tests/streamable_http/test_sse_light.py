"""Light SSE answers on the lean server (`fast_pending.Pending` with its light `SseWriter`): a request whose
only output is its answer is answered over SSE with no `Stream` made for it (its events, stored when
resumable, written with the head and the end); one that sends something first gets its stream at that
moment, the events in the order they were sent; and a stateless request's connection of the MCP server is
made once per stateless lane, not once per request.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import fast_pending, sse_wire
from mcpframe.http.events import split_event_id
from mcpframe.server import Context
from mcpframe.server.app import Server

from ._live_support import GatedTools, live_app, serving
from ._server_support import JSON_AND_SSE, call, messages, modern_meta, sse_events

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def streams(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every `Stream` a `Pending` exchange made (`_upgrade`: a session's, or one of its own)."""
    made: list[Any] = []
    real = fast_pending.Pending._upgrade

    def counted(self: fast_pending.Pending) -> Any:
        stream = real(self)
        made.append(stream)
        return stream

    monkeypatch.setattr(fast_pending.Pending, "_upgrade", counted)
    return made


class Tools(GatedTools):
    """`GatedTools` with a `def` tool that logs before it answers."""

    def __init__(self) -> None:
        super().__init__("sse-light")

        @self.server.tool
        async def noisy(text: str, ctx: Context) -> str:
            """Suspends, logs, then answers."""
            await anyio.sleep(0)
            await ctx.info("first")
            return text


def _session_streams(app: Any, headers: dict[str, str]) -> int:
    """How many streams the session of `headers` holds (made by a session's `new_stream`)."""
    return len(app.sessions.sessions[headers["mcp-session-id"]].streams)


@pytest.mark.parametrize("mode", ["sse", "resumable"])
async def test_an_answer_alone_makes_no_stream_and_is_stored_when_resumable(
    mode: str, streams: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sse_wire, "HOLD", 60.0)  # a busy box's worker thread never outlasts the head's hold
    tools = Tools()
    store = {"event_store": None} if mode == "sse" else {}
    async with serving(tools, response_mode=mode, **store) as (url, app, client, headers):
        before = _session_streams(app, headers)
        with anyio.fail_after(10):
            for rid in (2, 3):
                response = await client.post(
                    url, json=call("echo", {"text": f"e{rid}"}, rid=rid), headers=headers
                )
                assert response.headers["content-type"].startswith("text/event-stream")
                assert (
                    response.headers.get("transfer-encoding") == "chunked"
                )  # as the stream's writer writes it
                events = sse_events(response.text)
                if mode == "resumable":
                    assert [sorted(e) for e in events] == [["data", "id", "retry"], ["data", "event", "id"]]
                    # the answer is stored after the priming event: replayed from its id
                    resume = {**headers, "accept": "text/event-stream", "last-event-id": events[0]["id"]}
                    again = await client.get(url, headers=resume)
                    assert messages(again.text) == messages(response.text)
                else:
                    assert [sorted(e) for e in events] == [["data", "event"]]
                assert messages(response.text) == [
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "result": {"content": [{"type": "text", "text": f"e{rid}"}]},
                    }
                ]
        assert _session_streams(app, headers) == before
    assert streams == []


async def test_a_frame_before_the_answer_makes_the_stream_then_and_goes_first(streams: list[Any]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="resumable") as (url, _, client, headers):
        with anyio.fail_after(10):
            response = await client.post(url, json=call("noisy", {"text": "n"}, rid=4), headers=headers)
    assert len(streams) == 1
    got = messages(response.text)
    assert [m.get("method") for m in got] == ["notifications/message", None]
    assert got[1]["result"]["content"] == [{"type": "text", "text": "n"}]
    events = sse_events(response.text)
    assert "retry" in events[0]  # primed first, then the log and the answer, all on the stream made
    ids = [split_event_id(e["id"]) for e in events]
    assert all(i is not None and i[0] == ids[0][0] for i in ids)  # type: ignore[index]


async def test_a_stateless_lane_keeps_one_connection_for_its_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = Tools()
    made: list[Any] = []
    real = Server.connection

    def counted(self: Server) -> Any:
        conn = real(self)
        made.append(conn)
        return conn

    monkeypatch.setattr(Server, "connection", counted)
    headers = {
        **JSON_AND_SSE,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }
    async with live_app(tools, response_mode="auto") as (url, _), httpx.AsyncClient(timeout=10) as client:
        with anyio.fail_after(10):
            for rid in range(1, 6):  # one at a time: the same idle stateless lane each time after the first
                body = call("echo", {"text": f"s{rid}"}, rid=rid, **modern_meta())
                answered = await client.post(url, json=body, headers=headers)
                assert answered.json()["result"]["content"] == [{"type": "text", "text": f"s{rid}"}]
    # the first request goes the full path (a connection of its own); the fast path's lane keeps one
    assert len(made) == 2
    assert all(conn.closed for conn in made)  # closed as the server stopped (the lane's with its lane)
