"""SSE answers of requests answered in their first step on the lean server (`fast._handover`'s `sse`): the
whole SSE answer, made with no `Exchange` or `Stream` (the events stored in the event store only), is the
one the full path gives, and stays replayable with `Last-Event-ID`; a store that makes the answer wait takes
the full path's way; a handler that suspends is still answered by the task-free SSE writer, a light one
with no full exchange (`fast_pending.Pending`). (Without an eager start, `MCPFRAME_PUBLIC_ONLY=1` on 3.11,
no handler answers in its first step: every request is such a `Pending`, and the same answer comes from its
writer.)
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import fast
from mcpframe.http.events import MemoryEventStore, split_event_id
from mcpframe.http.exchange import Exchange

from ._lean_support import Tools, in_mode, mode_options
from ._live_support import live_app
from ._server_support import JSON_AND_SSE, asgi_client, call, initialize, messages, modern_meta, sse_events
from ._server_support import session_headers as headers_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def exchanges(monkeypatch: pytest.MonkeyPatch) -> list[Exchange]:
    """Every `Exchange` the fast path made."""
    made: list[Exchange] = []

    def counted(*args: Any, **kwargs: Any) -> Exchange:
        exchange = Exchange(*args, **kwargs)
        made.append(exchange)
        return exchange

    monkeypatch.setattr(fast, "Exchange", counted)
    return made


def _shape(text: str) -> list[list[str]]:
    """The fields of each SSE event."""
    return [sorted(event) for event in sse_events(text)]


class _AwaitedStore(MemoryEventStore):
    """The memory store behind an awaited `store` of its own: SSE answers cannot be made without waiting."""

    async def store(self, session_id: str, stream_id: str, message: bytes | None) -> str:
        return await super().store(session_id, stream_id, message)


@pytest.mark.parametrize("mode", ["sse", "resumable"])
async def test_a_first_step_answer_is_the_full_paths_sse_answer_with_no_exchange(
    mode: str, exchanges: list[Exchange]
) -> None:
    tools = Tools()
    async with in_mode(tools, mode) as (url, _, client, headers):
        exchanges.clear()
        with anyio.fail_after(10):
            lean = await client.post(url, json=call("aecho", {"text": "a"}, rid=2), headers=headers)
    assert exchanges == []  # (no eager start: it suspends, a `Pending` with its light writer)
    async with asgi_client(tools.server, **mode_options(mode)) as (full_client, _):
        session_id = await initialize(full_client)
        full = await full_client.post(
            "/mcp", json=call("aecho", {"text": "a"}, rid=2), headers=headers_of(session_id)
        )
    assert lean.status_code == full.status_code == 200
    assert lean.headers["content-type"] == full.headers["content-type"] == "text/event-stream"
    assert lean.headers["mcp-session-id"] == headers["mcp-session-id"]
    assert (
        messages(lean.text)
        == messages(full.text)
        == [{"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "a"}]}}]
    )
    assert _shape(lean.text) == _shape(full.text)
    if mode == "resumable":
        assert _shape(lean.text) == [["data", "id", "retry"], ["data", "event", "id"]]
        ids = [split_event_id(event["id"]) for event in sse_events(lean.text)]
        assert ids[0] is not None
        assert ids[1] is not None
        assert ids[0][0] == ids[1][0]  # one stream, its ids increasing
        assert ids[0][1] < ids[1][1]
    else:
        assert _shape(lean.text) == [["data", "event"]]


async def test_a_first_step_sse_answer_is_replayed_after_its_priming_event(exchanges: list[Exchange]) -> None:
    tools = Tools()
    async with in_mode(tools, "resumable") as (url, _, client, headers):
        exchanges.clear()
        with anyio.fail_after(10):
            answered = await client.post(url, json=call("aecho", {"text": "r"}, rid=3), headers=headers)
            priming = sse_events(answered.text)[0]["id"]
            resume = {**headers, "accept": "text/event-stream", "last-event-id": priming}
            replay = await client.get(url, headers=resume)
    assert exchanges == []  # (no eager start: it suspends, a `Pending` with its light writer)
    assert replay.status_code == 200
    assert messages(replay.text) == [
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "r"}]}}
    ]


async def test_a_store_that_waits_takes_the_full_paths_way(exchanges: list[Exchange]) -> None:
    tools = Tools()
    async with in_mode(tools, "resumable", event_store=_AwaitedStore()) as (url, _, client, headers):
        exchanges.clear()
        with anyio.fail_after(10):
            answered = await client.post(url, json=call("aecho", {"text": "w"}, rid=4), headers=headers)
    assert len(exchanges) == 1  # the started exchange of `PostHandler.respond`
    assert _shape(answered.text) == [["data", "id", "retry"], ["data", "event", "id"]]
    assert messages(answered.text)[-1]["result"]["content"] == [{"type": "text", "text": "w"}]


@pytest.mark.parametrize("tool", ["aecho", "echo"])
async def test_a_stateless_request_is_answered_over_sse_whole_or_by_the_writer(
    tool: str, exchanges: list[Exchange]
) -> None:
    tools = Tools()
    async with live_app(tools, **mode_options("sse")) as (url, _), httpx.AsyncClient(timeout=10) as client:
        headers = {**JSON_AND_SSE, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
        with anyio.fail_after(10):
            for rid in (5, 6):  # the second on the stateless lane the first gave back: the fast path's
                exchanges.clear()
                body = call(tool, {"text": f"s{rid}"}, rid=rid, **modern_meta())
                answered = await client.post(url, json=body, headers={**headers, "mcp-name": tool})
                assert answered.status_code == 200
                assert answered.headers["content-type"] == "text/event-stream"
                assert "mcp-session-id" not in answered.headers
                assert _shape(answered.text) == [["data", "event"]]
                (message,) = messages(answered.text)
                assert message["id"] == rid
                assert message["result"]["content"] == [{"type": "text", "text": f"s{rid}"}]
    assert exchanges == []  # one that suspends gets a `Pending` and its light writer: no full exchange
