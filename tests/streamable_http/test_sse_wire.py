"""SSE answers on the lean server written with no task (`http/sse_wire.py`'s `SseWriter`): a suspended
handler whose client is answered with SSE gets its events written where they are emitted, with the same
answers as the full path, and everything an SSE response must keep: events before the answer, a slow
client holding back its producer (never the server's memory), a client leaving (the handler cancelled once
when nobody can resume), resumption, keep-alive comments and SSE polling.

No test here waits for time to pass, except for a timer the server itself must fire (bounded by
`fail_after`): tools wait on gates the test opens once it has seen what it needs.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import sse_wire
from mcpframe.http.events import split_event_id
from mcpframe.http.sessions import HttpSession
from mcpframe.server import Context

from ._live_support import (
    GatedTools,
    connection_of,
    flooding,
    post_streamed,
    read_raw,
    serving,
    until,
    wire_tasks,
)
from ._server_support import call, messages, sse_events

__all__ = ["wire_tasks"]  # the fixture, used by name

pytestmark = pytest.mark.anyio

_BIG = 32 * 1024  # one log event's payload in the slow-client test
_LOGS = 400  # ... and how many: ~13 MB, far more than the socket buffers hold


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tools(GatedTools):
    """`GatedTools` with a tool that logs between two suspensions and one that logs a flood."""

    def __init__(self) -> None:
        super().__init__("sse-wire")
        self.logged = 0
        self.logs = _LOGS  # how many `flood` logs: a test may lower it while the flood runs
        tools = self

        @self.server.tool
        async def note(ctx: Context) -> str:
            """Suspends, logs, suspends again, then answers."""
            await anyio.sleep(0)
            await ctx.info("before")
            tools.entered.set()
            await tools.gate.wait()
            return "noted"

        @self.server.tool
        async def flood(ctx: Context) -> str:
            """Suspends, then logs `tools.logs` big messages as fast as it may."""
            await anyio.sleep(0)
            while tools.logged < tools.logs:
                await ctx.info("x" * _BIG)
                tools.logged += 1
            return "flooded"


@pytest.fixture
def writers(monkeypatch: pytest.MonkeyPatch) -> list[sse_wire.SseWriter]:
    """Every `SseWriter` the lean server opened."""
    opened: list[sse_wire.SseWriter] = []
    real = sse_wire.SseWriter.opened

    def recorded(self: sse_wire.SseWriter, out: Any) -> None:
        opened.append(self)
        real(self, out)

    monkeypatch.setattr(sse_wire.SseWriter, "opened", recorded)
    return opened


@pytest.mark.parametrize("mode", ["sse", "resumable"])
async def test_a_def_tool_is_answered_over_sse_with_no_task(
    mode: str, writers: list[sse_wire.SseWriter], wire_tasks: list[str]
) -> None:
    tools = Tools()
    store = {"event_store": None} if mode == "sse" else {}  # "sse": not resumable, no ids
    async with serving(tools, response_mode=mode, **store) as (url, _, client, headers):
        wire_tasks.clear()
        for rid in (2, 3):  # the second on a lane the first gave back
            response = await client.post(
                url, json=call("echo", {"text": f"t{rid}"}, rid=rid), headers=headers
            )
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["mcp-session-id"] == headers["mcp-session-id"]
            events = sse_events(response.text)
            if mode == "resumable":  # primed, and the answer stored: both carry ids
                assert [sorted(e) for e in events] == [["data", "id", "retry"], ["data", "event", "id"]]
                ids = [split_event_id(e["id"]) for e in events]
                assert ids[0] is not None
                assert ids[1] is not None
                assert ids[0][0] == ids[1][0]  # one stream ...
                assert ids[0][1] < ids[1][1]  # ... its ids increasing
            else:
                assert [sorted(e) for e in events] == [["data", "event"]]
            assert messages(response.text) == [
                {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": f"t{rid}"}]}}
            ]
    assert len(writers) == 2
    assert wire_tasks == []  # nothing ran in a task of the wire server's


@contextlib.asynccontextmanager
async def noted(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], rid: int
) -> AsyncIterator[tuple[AsyncIterator[bytes], bytes]]:
    """POST a call of `note`, streamed; yields its raw chunks to read on and what came up to its log event
    (the tool waits on its gate after it), and closes the response on the way out."""
    response = await post_streamed(client, url, headers, call("note", rid=rid))
    try:
        chunks = response.aiter_raw()
        logged = b"notifications/message"
        yield chunks, await read_raw(chunks, lambda got: logged in got and got.endswith(b"\n\n"))
    finally:
        await response.aclose()


async def test_an_event_before_the_answer_is_written_before_the_answer_comes(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="resumable") as (url, _, client, headers):
        with anyio.fail_after(10):
            async with noted(client, url, headers, rid=4) as (chunks, head):
                assert not tools.gate.is_set()  # the log arrived while the tool still waits
                tools.gate.set()
                got = head + b"".join([chunk async for chunk in chunks])
    text = got.decode()
    assert [m.get("method") for m in messages(text)] == ["notifications/message", None]
    assert messages(text)[1]["result"]["content"] == [{"type": "text", "text": "noted"}]
    assert len(writers) == 1


async def test_a_progress_token_is_still_answered_by_the_full_path_with_progress_first(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="sse") as (url, _, client, headers):
        body = call("echo", {"text": "p"}, rid=5, progressToken="tok")
        response = await client.post(url, json=body, headers=headers)
    got = messages(response.text)
    assert got[-1]["result"]["content"] == [{"type": "text", "text": "p"}]
    assert writers == []  # a progress token is declined by the fast path


async def test_a_slow_client_holds_back_the_producer_not_the_servers_memory(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with (
        serving(tools, response_mode="sse") as (url, _, _client, headers),
        flooding(url, headers, writers) as slow,  # the socket is full
    ):
        with anyio.fail_after(60):
            transport = connection_of(writers[0]).transport
            assert transport is not None
            stalled = tools.logged
            for _ in range(200):  # the loop runs on; the producer waits for room
                await anyio.sleep(0)
            assert tools.logged == stalled < _LOGS
            # what the server holds: its write buffer (past the high-water mark by at most one write)
            assert transport.get_write_buffer_size() < 1024 * 1024
            assert writers[0].queued() <= 1
            text = await slow.read_until(b"0\r\n\r\n", 1)  # now read it all: the rest comes
    assert tools.logged == _LOGS
    assert text.count(b"notifications/message") == _LOGS
    assert b'"text":"flooded"' in text
    logs = messages(_dechunked(text.split(b"\r\n\r\n", 1)[1]).decode())
    assert [m.get("method") for m in logs] == ["notifications/message"] * _LOGS + [None]  # answer last
    assert logs[-1]["id"] == 6


def _dechunked(body: bytes) -> bytes:
    """A chunked HTTP/1.1 body's content."""
    out = b""
    while True:
        size, _, rest = body.partition(b"\r\n")
        length = int(size, 16)
        if length == 0:
            return out
        out += rest[:length]
        body = rest[length + 2 :]


async def test_a_client_leaving_a_stream_nobody_can_resume_cancels_its_handler_once(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    options = {"response_mode": "sse", "event_store": None}
    async with serving(tools, **options) as (url, app, client, headers):
        with anyio.fail_after(10):
            response = await post_streamed(client, url, headers, call("hold", {"text": "x"}, rid=7))
            assert response.headers["content-type"].startswith("text/event-stream")
            await tools.entered.wait()
            assert len(writers) == 1
            await response.aclose()  # the client leaves mid-stream
            await until(lambda: tools.cancelled == 1 and app.posts.admission.running == 0)
            again = await client.post(url, json=call("echo", {"text": "on"}, rid=8), headers=headers)
        assert messages(again.text)[-1]["result"]["content"] == [{"type": "text", "text": "on"}]
        session = app.sessions.find(headers, None)
        assert isinstance(session, HttpSession)
        assert session.open_requests == 0  # the response counted busy no more
    assert (tools.cancelled, tools.finished) == (1, 0)


async def test_a_dropped_resumable_answer_is_replayed_after_its_priming_event(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="resumable") as (url, app, client, headers):
        with anyio.fail_after(10):
            response = await post_streamed(client, url, headers, call("hold", {"text": "back"}, rid=9))
            first = await read_raw(response.aiter_raw(), lambda got: b"\n\n" in got)
            await response.aclose()  # dropped after its priming event
            priming = sse_events(first.decode())[0]["id"]
            session = app.sessions.find(headers, None)
            assert isinstance(session, HttpSession)
            await until(lambda: not any(stream.attached for stream in session.streams.values()))
            assert tools.cancelled == 0  # resumable: the handler goes on
            tools.gate.set()
            await until(lambda: app.posts.admission.running == 0)
            resume = {**headers, "accept": "text/event-stream", "last-event-id": priming}
            replay = await client.get(url, headers=resume)
    assert messages(replay.text) == [
        {"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "back"}]}}
    ]
    assert (tools.finished, tools.cancelled) == (1, 0)
    assert len(writers) == 1


async def test_a_quiet_stream_gets_keepalive_comments_then_its_answer(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="sse", keepalive=0.01) as (url, _, client, headers):
        with anyio.fail_after(10):
            response = await post_streamed(client, url, headers, call("hold", {"text": "k"}, rid=10))
            try:
                chunks = response.aiter_raw()
                got = await read_raw(chunks, lambda got: got.count(b": keepalive\n\n") >= 2)
                tools.gate.set()
                got += b"".join([chunk async for chunk in chunks])
            finally:
                await response.aclose()
    answer = got.index(b'"text":"k"')
    assert got.count(b": keepalive\n\n", answer) == 0  # none after the answer
    assert messages(got.decode())[-1]["result"]["content"] == [{"type": "text", "text": "k"}]
    assert len(writers) == 1
    assert writers[0].closed
    assert writers[0]._entry is None  # the quiet timer's entry cleared with the answer


async def test_a_quiet_resumable_stream_is_closed_for_polling_and_resumed(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    options = {"response_mode": "resumable", "close_idle_streams": 0.01}
    async with serving(tools, **options) as (url, app, client, headers):
        with anyio.fail_after(10):
            body = call("hold", {"text": "polled"}, rid=11)
            response = await client.post(url, json=body, headers=headers)  # ends once quiet
            assert messages(response.text) == []
            priming = sse_events(response.text)[0]["id"]
            assert tools.entered.is_set()
            assert tools.cancelled == 0
            tools.gate.set()
            await until(lambda: app.posts.admission.running == 0)
            resume = {**headers, "accept": "text/event-stream", "last-event-id": priming}
            replay = await client.get(url, headers=resume)
    assert messages(replay.text)[-1]["result"]["content"] == [{"type": "text", "text": "polled"}]
    assert len(writers) == 1
