"""A POST whose handler suspends, over the lean server (`http/fast.py`'s `Parked` JSON answer): answered
as the full path answers it, with no task waiting for it, and every way it can end (answer, SSE switch,
cancel, DELETE, a client that leaves) ends it once.

No test here waits for time to pass: tools wait on gates the test opens once it has seen what it needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from mcpframe import jsonrpc
from mcpframe.http import wire as wire_module
from mcpframe.http.deadlines import Deadlines
from mcpframe.http.responses import session_ended_text
from mcpframe.http.sessions import HttpSession
from mcpframe.http.wire_parts import Parked

from ._fast_support import record_fast_posts
from ._live_support import LateLogTools, post_streamed, read_raw, serving, until, wire_tasks
from ._server_support import call, messages, raw_post

__all__ = ["wire_tasks"]  # the fixture, used by name

pytestmark = pytest.mark.anyio

LEAN_AND_UVICORN = pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
"""Run on the lean server (the fast path) and on uvicorn (the full ASGI path): the same answers."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tools(LateLogTools):
    """`LateLogTools` with a `def` tool that waits on a thread's gate."""

    def __init__(self) -> None:
        super().__init__("deferred")
        self.thread_gate = threading.Event()
        tools = self

        @self.server.tool
        def blocked(text: str) -> str:
            """A `def` tool that waits for the test (on its worker thread)."""
            tools.thread_gate.wait(10)
            return text


def _waiting_deadlines() -> list[Any]:
    """The running loop's deadlines still waiting (not cancelled), of every length."""
    cache = Deadlines._cache
    assert cache[0] is asyncio.get_running_loop()
    return [entry for deadlines in cache[1].values() for entry in deadlines._queue if entry[1] is not None]


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, Any]:
    """One HTTP/1.1 response with a content-length: its status and its JSON body."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    lines = head.split("\r\n")
    fields = dict(line.lower().split(": ", 1) for line in lines[1:] if line)
    body = await reader.readexactly(int(fields["content-length"]))
    return int(lines[0].split()[1]), json.loads(body)


@contextlib.asynccontextmanager
async def held_call(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], tools: Tools, body: dict[str, Any]
) -> AsyncIterator[list[httpx.Response]]:
    """POST `body` (a call of a tool that waits on `tools.gate`) in a task; the block runs once its handler
    has entered, and the way out waits for the POST's response, which the list yielded then holds (all
    within 10 seconds)."""
    got: list[httpx.Response] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def post() -> None:
                got.append(await client.post(url, json=body, headers=headers))

            tg.start_soon(post)
            await tools.entered.wait()
            yield got


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the fast path made of each POST: "deferred" (a `Parked` JSON answer), "other" or "declined"."""
    return record_fast_posts(
        monkeypatch,
        lambda got: "declined" if got is None else "deferred" if isinstance(got, Parked) else "other",
    )


async def test_a_def_tool_is_answered_json_with_no_task_waiting(
    taken: list[str], wire_tasks: list[str]
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto") as (url, app, client, headers):
        taken.clear()
        wire_tasks.clear()
        for rid in range(2, 6):
            response = await client.post(
                url, json=call("echo", {"text": f"t{rid}"}, rid=rid), headers=headers
            )
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/json"
            assert response.headers["mcp-session-id"] == headers["mcp-session-id"]
            assert response.json() == {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"content": [{"type": "text", "text": f"t{rid}"}]},
            }
        assert taken == ["deferred"] * 4
        assert wire_tasks == []  # written by whatever ended the exchange, not by a task of the wire server
        assert app.posts.admission.running == 0
        session = app.sessions.find(headers, None)
        assert isinstance(session, HttpSession)
        assert list(session.streams) == [session.get_stream.id]  # each POST's stream forgotten once answered


@LEAN_AND_UVICORN
async def test_an_async_tool_that_suspends_gets_its_answer_when_released(
    http_server: str, taken: list[str]
) -> None:
    tools = Tools()
    async with serving(tools, http_server, response_mode="auto") as (url, app, client, headers):
        taken.clear()
        async with held_call(client, url, headers, tools, call("hold", {"text": "h"}, rid=7)) as got:
            assert not got  # held while the handler waits
            tools.gate.set()
        assert got[0].status_code == 200
        assert got[0].headers["content-type"] == "application/json"
        assert got[0].json()["result"]["content"] == [{"type": "text", "text": "h"}]
        assert (tools.finished, tools.cancelled) == (1, 0)
        assert taken == (["deferred"] if http_server == "mcpframe" else [])
        assert app.posts.admission.running == 0


@LEAN_AND_UVICORN
async def test_a_cancel_while_suspended_cancels_the_handler_once_and_answers_once(
    http_server: str, taken: list[str]
) -> None:
    tools = Tools()
    async with serving(tools, http_server, response_mode="auto") as (url, app, client, headers):
        taken.clear()
        async with held_call(client, url, headers, tools, call("hold", {"text": "c"}, rid=8)) as got:
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}}
            assert (await client.post(url, json=cancel, headers=headers)).status_code == 202
        assert (got[0].status_code, got[0].content) == (200, b"")  # a cancelled request gets no answer
        assert got[0].headers["content-type"] == "text/event-stream"  # never 202 for a request
        assert (tools.cancelled, tools.finished) == (1, 0)
        # the call was the fast path's (deferred); the cancel, a notification, the full path's
        assert taken == (["deferred", "declined"] if http_server == "mcpframe" else [])
        tools.gate.set()
        # the id is free again, and the session goes on
        again = await client.post(url, json=call("echo", {"text": "again"}, rid=8), headers=headers)
        assert again.json()["result"]["content"] == [{"type": "text", "text": "again"}]
        assert app.posts.admission.running == 0
        assert tools.cancelled == 1


@LEAN_AND_UVICORN
async def test_a_session_deleted_while_a_call_is_suspended_ends_it_once(
    http_server: str, taken: list[str]
) -> None:
    tools = Tools()
    async with serving(tools, http_server, response_mode="auto") as (url, app, client, headers):
        taken.clear()
        async with held_call(client, url, headers, tools, call("hold", {"text": "d"}, rid=9)) as got:
            assert (await client.delete(url, headers=headers)).status_code == 200
        # no answer came, its session ended: said with an error (the answer was still awaited as JSON)
        assert (got[0].status_code, got[0].headers["content-type"]) == (200, "application/json")
        assert got[0].json()["error"] == {"code": jsonrpc.CONNECTION_CLOSED, "message": session_ended_text(9)}
        assert (tools.cancelled, tools.finished) == (1, 0)
        assert taken == (["deferred"] if http_server == "mcpframe" else [])
        assert app.posts.admission.running == 0


async def test_a_stream_its_session_ends_while_walking_its_streams_answers_without_touching_them() -> None:
    """`HttpSession.close` ends every stream it holds, walking its dict of them: the deferred answer that
    this resolves must not change that dict (the exchange's own end forgets the stream). A deferred JSON
    answer has no stream until something other than its answer comes (`fast_pending.Pending`): the
    session's end reaches it through its exchange (the walk over streams with one made:
    `test_deferred_light.py`)."""
    tools = Tools()
    async with serving(tools, response_mode="auto") as (url, app, client, headers):
        async with held_call(client, url, headers, tools, call("hold", {"text": "w"}, rid=14)) as got:
            session = app.sessions.find(headers, None)
            assert isinstance(session, HttpSession)
            await session.close()  # its exchanges aborted, then every stream it holds ended
        # no answer came, its session ended: said with an error (the answer was still awaited as JSON)
        assert (got[0].status_code, got[0].headers["content-type"]) == (200, "application/json")
        assert got[0].json()["error"] == {
            "code": jsonrpc.CONNECTION_CLOSED,
            "message": session_ended_text(14),
        }
        tools.gate.set()
        with anyio.fail_after(10):
            await until(lambda: app.posts.admission.running == 0)
        assert list(session.streams) == [session.get_stream.id]


async def test_a_client_that_leaves_while_a_call_is_suspended_cancels_its_handler_once(
    monkeypatch: pytest.MonkeyPatch, taken: list[str]
) -> None:
    lost = anyio.Event()
    real_lost = wire_module._Connection.connection_lost

    def connection_lost(self: wire_module._Connection, exc: Exception | None) -> None:
        real_lost(self, exc)
        if self.current is not None:
            lost.set()  # the connection whose POST is still being answered

    monkeypatch.setattr(wire_module._Connection, "connection_lost", connection_lost)
    tools = Tools()
    async with serving(tools, response_mode="auto") as (url, app, client, headers):
        host, port = url.split("/")[2].split(":")
        taken.clear()
        with anyio.fail_after(10):
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw_post(url, headers, call("hold", {"text": "x"}, rid=10)))
            await tools.entered.wait()
            writer.close()
            await lost.wait()
            # nobody can receive the JSON answer and no event id resumes it: the exchange is aborted
            await until(lambda: tools.cancelled == 1 and app.posts.admission.running == 0)
        assert taken == ["deferred"]
        assert (tools.finished, tools.cancelled) == (0, 1)
        # the session, its lanes and the id go on serving
        tools.gate.set()
        again = await client.post(url, json=call("hold", {"text": "y"}, rid=10), headers=headers)
        assert again.json()["result"]["content"] == [{"type": "text", "text": "y"}]
        assert app.posts.admission.running == 0


async def test_a_wake_up_callback_that_fails_does_not_break_the_exchange_it_ends(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, taken: list[str]
) -> None:
    """The deferred answer's wake-up runs inside `Exchange.close` (the stream's `finish`), before the
    exchange's own `on_close` work: what it raises is logged, and the rest of the close still happens."""

    def broken(self: wire_module._Connection, cycle: Any, parked: Any, answer: Any) -> None:
        raise RuntimeError("boom")

    real = wire_module._Connection._unpark
    monkeypatch.setattr(wire_module._Connection, "_unpark", broken)
    tools = Tools()
    async with serving(tools, response_mode="auto") as (url, app, client, headers):
        session = app.sessions.find(headers, None)
        assert isinstance(session, HttpSession)
        host, port = url.split("/")[2].split(":")
        taken.clear()
        with anyio.fail_after(10):
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw_post(url, headers, call("hold", {"text": "x"}, rid=15)))
            await tools.entered.wait()
            tools.gate.set()
            await until(lambda: tools.finished == 1 and app.posts.admission.running == 0)
            writer.close()
        assert taken == ["deferred"]
        assert "wake-up callback failed" in caplog.text
        assert list(session.streams) == [session.get_stream.id]  # the exchange's end forgot its stream
        monkeypatch.setattr(wire_module._Connection, "_unpark", real)
        again = await client.post(url, json=call("echo", {"text": "on"}, rid=15), headers=headers)
        assert again.json()["result"]["content"] == [{"type": "text", "text": "on"}]  # the id is free


async def test_posts_pipelined_behind_a_suspended_one_are_answered_in_order(taken: list[str]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto") as (url, app, _client, headers):
        host, port = url.split("/")[2].split(":")
        taken.clear()
        with anyio.fail_after(10):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(  # three POSTs in one write: the first suspends, the others wait their turn
                raw_post(url, headers, call("hold", {"text": "first"}, rid=30))
                + raw_post(url, headers, call("echo", {"text": "second"}, rid=31))
                + raw_post(url, headers, call("echo", {"text": "third"}, rid=32))
            )
            await tools.entered.wait()
            tools.gate.set()
            answers = [await _read_answer(reader) for _ in range(3)]
            writer.close()
        assert [(status, got["id"]) for status, got in answers] == [(200, 30), (200, 31), (200, 32)]
        assert [got["result"]["content"][0]["text"] for _, got in answers] == ["first", "second", "third"]
        assert taken == ["deferred"] * 3
        assert app.posts.admission.running == 0


async def test_a_deferred_answer_to_a_client_reading_slowly_waits_for_room(
    monkeypatch: pytest.MonkeyPatch, taken: list[str]
) -> None:
    """The socket's buffer filled while the answer was being made (`pause_writing`): the answer is written
    once the transport says there is room (`resume_writing`), not added to the full buffer."""
    connections: list[wire_module._Connection] = []
    real_park = wire_module._Connection._park

    def recorded(self: wire_module._Connection, cycle: Any, parked: Any) -> None:
        connections.append(self)  # (where the answer is parked: a plain read parks it without `_next`)
        real_park(self, cycle, parked)

    monkeypatch.setattr(wire_module._Connection, "_park", recorded)
    tools = Tools()
    async with serving(tools, response_mode="auto") as (url, app, _client, headers):
        host, port = url.split("/")[2].split(":")
        taken.clear()
        connections.clear()
        with anyio.fail_after(10):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw_post(url, headers, call("hold", {"text": "slow"}, rid=33)))
            await tools.entered.wait()
            (conn,) = connections
            cycle = conn.current
            assert cycle is not None
            conn.pause_writing()  # as the transport does when its buffer passes the high-water mark
            tools.gate.set()
            await until(lambda: app.posts.admission.running == 0)  # the exchange ended: answer resolved
            for _ in range(10):
                await anyio.sleep(0)  # let the loop run what it would (the task waiting for room)
            assert not cycle.head_sent  # held while the buffer is full
            conn.resume_writing()
            status, got = await _read_answer(reader)
            writer.close()
        assert (status, got["id"], got["result"]["content"]) == (200, 33, [{"type": "text", "text": "slow"}])
        assert taken == ["deferred"]


@LEAN_AND_UVICORN
async def test_a_handler_that_logs_after_suspending_is_switched_to_sse(
    http_server: str, taken: list[str]
) -> None:
    tools = Tools()
    async with serving(tools, http_server, response_mode="auto") as (url, app, client, headers):
        taken.clear()
        async with held_call(client, url, headers, tools, call("late_log", rid=11)) as got:
            tools.gate.set()
        assert got[0].headers["content-type"].startswith("text/event-stream")
        sent = messages(got[0].text)
        assert [m.get("method") for m in sent] == ["notifications/message", None]
        assert sent[1]["id"] == 11
        assert sent[1]["result"]["content"] == [{"type": "text", "text": "logged"}]
        assert taken == (["deferred"] if http_server == "mcpframe" else [])
        assert app.posts.admission.running == 0
        assert not _waiting_deadlines()  # the switch cancelled the POST's stream_after deadline


@LEAN_AND_UVICORN
async def test_a_client_that_takes_only_json_gets_json_from_a_handler_that_logs(http_server: str) -> None:
    tools = Tools()
    async with serving(tools, http_server, response_mode="auto") as (url, _app, client, session):
        headers = {**session, "accept": "application/json"}
        async with held_call(client, url, headers, tools, call("late_log", rid=12)) as got:
            tools.gate.set()
        assert got[0].headers["content-type"] == "application/json"
        assert got[0].json()["result"]["content"] == [{"type": "text", "text": "logged"}]


@LEAN_AND_UVICORN
async def test_no_answer_within_stream_after_switches_to_sse(http_server: str) -> None:
    tools = Tools()
    async with serving(tools, http_server, response_mode="auto", stream_after=0) as (
        url,
        app,
        client,
        headers,
    ):
        with anyio.fail_after(10):
            response = await post_streamed(client, url, headers, call("blocked", {"text": "s"}, rid=13))
            try:
                # the head came while the tool still waits on its worker thread: the switch happened
                assert response.headers["content-type"].startswith("text/event-stream")
                tools.thread_gate.set()
                text = (await response.aread()).decode()
            finally:
                await response.aclose()
        answer = [m for m in messages(text) if m.get("id") == 13]
        assert answer[0]["result"]["content"] == [{"type": "text", "text": "s"}]
        assert app.posts.admission.running == 0


# ------------------------------------------------------------------------ an SSE answer's client leaving


async def _leave_mid_stream(
    url: str, client: httpx.AsyncClient, headers: dict[str, str], tools: Tools, *, primed: bool
) -> str:
    """POST `hold`, read the head of its SSE answer (and its priming event if `primed`), hang up; the
    priming event's id (`""`: none)."""
    with anyio.fail_after(10):
        response = await post_streamed(client, url, headers, call("hold", {"text": "gone"}, rid=20))
        try:
            assert response.headers["content-type"].startswith("text/event-stream")
            await tools.entered.wait()
            first = b""
            if primed:  # its first event is there already
                first = await read_raw(response.aiter_raw(), lambda got: b"\n\n" in got)
        finally:
            await response.aclose()  # the client leaves while the handler waits
    event_id = [line for line in first.decode().splitlines() if line.startswith("id: ")]
    return event_id[0][4:] if event_id else ""


@LEAN_AND_UVICORN
async def test_a_client_leaving_a_stream_nobody_can_resume_cancels_its_handler_once(http_server: str) -> None:
    tools = Tools()
    async with serving(tools, http_server, response_mode="sse", event_store=None) as (
        url,
        app,
        client,
        headers,
    ):
        await _leave_mid_stream(url, client, headers, tools, primed=False)
        with anyio.fail_after(10):
            await until(lambda: tools.cancelled == 1 and app.posts.admission.running == 0)
        assert tools.finished == 0
        again = await client.post(url, json=call("echo", {"text": "on"}, rid=21), headers=headers)
        assert messages(again.text)[-1]["result"]["content"] == [{"type": "text", "text": "on"}]
        assert tools.cancelled == 1


@LEAN_AND_UVICORN
async def test_a_client_leaving_a_resumable_stream_leaves_its_handler_running(http_server: str) -> None:
    tools = Tools()
    async with serving(tools, http_server, response_mode="resumable") as (url, app, client, headers):
        priming = await _leave_mid_stream(url, client, headers, tools, primed=True)
        assert priming
        session = app.sessions.find(headers, None)
        assert isinstance(session, HttpSession)
        with anyio.fail_after(10):
            await until(lambda: not any(stream.attached for stream in session.streams.values()))
        tools.gate.set()
        with anyio.fail_after(10):
            await until(lambda: app.posts.admission.running == 0)
            resume = {**headers, "accept": "text/event-stream", "last-event-id": priming}
            async with client.stream("GET", url, headers=resume) as replay:
                text = (await replay.aread()).decode()
        assert (tools.finished, tools.cancelled) == (1, 0)
        assert messages(text)[-1]["result"]["content"] == [{"type": "text", "text": "gone"}]
