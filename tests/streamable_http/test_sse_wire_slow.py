"""The lean server's SSE writer (`SseWriter`) with a client that reads nothing for a while: a producer
cancelled while it waits for room leaves the connection answering what was pipelined behind it, no
keep-alive comment piles up behind a full socket, requests pipelined behind a streamed answer are answered
in order, and a failure while ending the stream of a client that left does not stop the rest.

As in `test_sse_wire.py`, nothing here waits for time to pass except for a timer the server must fire
(bounded by `fail_after`); a small receive buffer on the client's socket fills the server's.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import sse_wire
from mcpframe.http.events import split_event_id
from mcpframe.http.sessions import HttpSession

from ._live_support import connection_of, flooding, live_app, paused, post_streamed, serving, until
from ._server_support import call, messages, open_session, sse_events
from .test_sse_wire import _LOGS, Tools, noted, writers

__all__ = ["writers"]  # the fixture, used by name

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_producer_cancelled_while_it_waits_for_room_leaves_the_connection_answering(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    pipelined = [call("echo", {"text": t}, rid=rid) for rid, t in ((60, "a"), (61, "b"))]
    async with (
        serving(tools, response_mode="sse") as (url, _, client, headers),
        flooding(url, headers, writers, *pipelined) as slow,
    ):
        with anyio.fail_after(10):
            connection = connection_of(writers[0])
            full = connection.writable
            assert full is not None
            # the session ends (from another connection) while its producer waits for room: the
            # producer is cancelled, the connection's own future must not be
            assert (await client.delete(url, headers=headers)).status_code in (200, 204)
            await until(lambda: tools.logged < _LOGS and writers[0].closed)
            assert not full.cancelled()
            # the streamed answer ends; the two behind it are answered (the session is gone: 404)
            text = await slow.read_until(b"unknown or expired session", 2)
    assert (text.count(b"HTTP/1.1 200 OK"), text.count(b"HTTP/1.1 404 Not Found")) == (1, 2)
    assert b"0\r\n\r\nHTTP/1.1 404" in text  # the SSE answer ended before the next one
    assert connection.current is None
    assert not connection.pending


async def test_no_keepalive_comment_piles_up_while_the_client_takes_nothing(
    writers: list[sse_wire.SseWriter], monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet: list[int] = []
    real = sse_wire.SseWriter._quiet

    def counted(self: sse_wire.SseWriter) -> None:
        quiet.append(1)
        real(self)

    monkeypatch.setattr(sse_wire.SseWriter, "_quiet", counted)
    tools = Tools()
    async with (
        serving(tools, response_mode="sse", keepalive=0.005) as (url, _, _client, headers),
        flooding(url, headers, writers) as slow,
    ):
        with anyio.fail_after(60):
            transport = connection_of(writers[0]).transport
            assert transport is not None
            quiet.clear()
            await until(lambda: len(quiet) >= 1)  # (an event put before the pause is out by now)
            held = transport.get_write_buffer_size()
            await until(lambda: len(quiet) >= 6)  # the timer fired on, the socket still full
            assert paused(writers)
            assert transport.get_write_buffer_size() <= held
            assert writers[0]._entry is not None  # re-armed: comments again once there is room
            text = await slow.read_until(b"0\r\n\r\n", 1)
            await until(lambda: writers[0].closed)
    assert tools.logged == _LOGS
    assert b'"text":"flooded"' in text
    assert writers[0]._entry is None  # the answer is out: no timer left behind


async def test_requests_pipelined_behind_a_streamed_answer_are_answered_in_order(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    pipelined = [call("echo", {"text": t}, rid=rid) for rid, t in ((60, "first"), (61, "second"))]
    async with (
        serving(tools, response_mode="sse") as (url, _, _client, headers),
        flooding(url, headers, writers, *pipelined) as slow,
    ):
        # the writer waits for room, the two requests behind it: the flood ends two logs on, so what is
        # left to read is what the buffers hold, not the rest of ~13 MB (a slow read on a loaded machine)
        tools.logs = tools.logged + 2
        with anyio.fail_after(60):  # a hang guard: no timer is waited for here
            text = await slow.read_until(b"0\r\n\r\n", 3)
    assert tools.logged == tools.logs < _LOGS
    assert text.count(b"notifications/message") == tools.logs
    flooded = text.index(b'"text":"flooded"')
    first, second = text.index(b'"text":"first"'), text.index(b'"text":"second"')
    assert text.rindex(b"notifications/message") < flooded < first < second
    assert text.count(b"HTTP/1.1 200 OK") == 3


async def test_a_failure_ending_the_stream_of_a_client_that_left_does_not_stop_the_rest(
    writers: list[sse_wire.SseWriter], caplog: pytest.LogCaptureFixture
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="sse", event_store=None) as (url, app, _client, headers):

        def spawn(fn: Any) -> None:
            raise RuntimeError("spawn failed")

        app.posts.sessions.spawn = spawn  # type: ignore[method-assign]
        async with flooding(url, headers, writers) as slow:
            # the flood ends two logs on: what is left is a few emits, not ~13 MB formatted for nobody (which
            # a loaded machine could take longer than a guard to do)
            tools.logs = tools.logged + 2
            with anyio.fail_after(60):  # a hang guard: no timer is waited for here
                slow.writer.transport.abort()  # the client leaves while its producer waits for room
                # the connection's end runs on: its producer is let go (its emits now go nowhere)
                await until(lambda: tools.logged == tools.logs)
    assert tools.logs < _LOGS
    assert writers[0].closed
    assert "ending the SSE stream" in caplog.text


async def test_a_resume_while_the_writer_is_attached_replaces_it(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="resumable") as (url, app, client, headers):
        with anyio.fail_after(10):
            # the priming event and the log, the tool still waiting
            async with noted(client, url, headers, rid=9) as (chunks, head):
                priming = sse_events(head.decode())[0]["id"]
                resume = {**headers, "accept": "text/event-stream", "last-event-id": priming}
                again = await client.send(client.build_request("GET", url, headers=resume), stream=True)
                try:
                    # the POST's answer ends: replaced
                    got = head + b"".join([chunk async for chunk in chunks])
                    assert writers[0].closed
                    tools.gate.set()
                    resumed = b"".join([chunk async for chunk in again.aiter_raw()])
                finally:
                    await again.aclose()
            await until(lambda: app.posts.admission.running == 0)
        session = app.sessions.find(headers, None)
        assert isinstance(session, HttpSession)
        assert session.open_requests == 0
    assert [m.get("method") for m in messages(got.decode())] == ["notifications/message"]
    replayed = messages(resumed.decode())
    assert [m.get("method") for m in replayed] == ["notifications/message", None]
    assert replayed[1]["result"]["content"] == [{"type": "text", "text": "noted"}]
    ids = [split_event_id(e["id"]) for e in sse_events(got.decode()) + sse_events(resumed.decode())]
    assert [seq for _, seq in filter(None, ids)] == [0, 1, 1, 2]  # priming, log; the log again, answer
    assert (tools.finished, tools.cancelled, len(writers)) == (0, 0, 1)


async def test_a_server_closing_with_a_writer_open_ends_it(writers: list[sse_wire.SseWriter]) -> None:
    tools = Tools()
    options = {"response_mode": "sse", "event_store": None, "keepalive": 60.0}
    async with httpx.AsyncClient(timeout=10) as client:
        async with live_app(tools, grace=0, **options) as (url, _):
            headers = await open_session(client, url)
            with anyio.fail_after(10):
                response = await post_streamed(client, url, headers, call("hold", {"text": "x"}, rid=7))
                await tools.entered.wait()
                assert writers[0]._entry is not None
        try:
            # no grace: the request is cut and its response with it (as on the full path, `SseReply`)
            with anyio.fail_after(10), contextlib.suppress(httpx.RemoteProtocolError):
                async for _ in response.aiter_raw():
                    pass
        finally:
            await response.aclose()
    assert tools.cancelled == 1
    assert writers[0].closed
    assert writers[0]._entry is None  # no timer left behind
    assert tools.finished == 0
    assert len(writers) == 1
