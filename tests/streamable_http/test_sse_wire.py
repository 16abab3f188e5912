"""SSE answers on the lean server written with no task (`http/sse_wire.py`'s `SseWriter`): a suspended
handler whose client is answered with SSE gets its events written where they are emitted, with the same
answers as the full path, and everything an SSE response must keep: events before the answer, a slow
client holding back its producer (never the server's memory), a client leaving (the handler cancelled once
when nobody can resume), resumption, keep-alive comments and SSE polling.

No test here waits for time to pass, except for a timer the server itself must fire (bounded by
`fail_after`): tools wait on gates the test opens once it has seen what it needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import sse_wire
from mcpframe.http import wire as wire_module
from mcpframe.http.events import split_event_id
from mcpframe.http.server import HttpOptions, StreamableHTTPServer, serve_http
from mcpframe.http.sessions import HttpSession
from mcpframe.server import Context, Server

from ._server_support import JSON_AND_SSE, call, messages, sse_events
from ._server_support import session_headers as headers_of

pytestmark = pytest.mark.anyio

_BIG = 32 * 1024  # one log event's payload in the slow-client test
_LOGS = 400  # ... and how many: ~13 MB, far more than the socket buffers hold


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tools:
    """A server whose tools wait on gates the test opens, counting how each run ended."""

    def __init__(self) -> None:
        self.server = Server("sse-wire", version="1.0.0")
        self.entered = anyio.Event()
        self.gate = anyio.Event()
        self.cancelled = 0
        self.finished = 0
        self.logged = 0
        tools = self

        @self.server.tool
        def echo(text: str) -> str:
            """A `def` tool: on the worker pool, so its answer comes after the POST's first step."""
            return text

        @self.server.tool
        async def hold(text: str) -> str:
            """Suspends until the test opens the gate."""
            tools.entered.set()
            try:
                await tools.gate.wait()
            except BaseException:
                tools.cancelled += 1
                raise
            tools.finished += 1
            return text

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
            """Suspends, then logs `_LOGS` big messages as fast as it may."""
            await anyio.sleep(0)
            for _ in range(_LOGS):
                await ctx.info("x" * _BIG)
                tools.logged += 1
            return "flooded"


@contextlib.asynccontextmanager
async def serving(
    tools: Tools, *, grace: float | None = None, **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTPServer]]:
    """`tools` on the lean server on 127.0.0.1 (stopped with `grace`, `serve_http`'s); yields (URL, the
    app)."""
    opts = HttpOptions(**options)
    app = StreamableHTTPServer(tools.server, opts)
    ready: list[str] = []
    started = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        started.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: serve_http(
                tools.server,
                port=0,
                options=opts,
                ready=on_ready,
                http_server="mcpframe",
                app=app,  # type: ignore[arg-type]
                grace=grace,
            )
        )
        with anyio.fail_after(10):
            await started.wait()
        try:
            yield ready[0], app
        finally:
            tg.cancel_scope.cancel()


async def open_session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    response = await client.post(url, json=body, headers=JSON_AND_SSE)
    assert response.status_code == 200, response.text
    headers = headers_of(response.headers["mcp-session-id"], "2025-11-25")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, json=note, headers=headers)).status_code == 202
    return headers


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until `condition()` holds (bounded by the caller's fail_after)."""
    while not condition():
        await anyio.sleep(0)


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


@pytest.fixture
def wire_tasks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The app calls the lean server ran in tasks (`WireServer.start`, `_spawn`), by coroutine name."""
    started: list[str] = []
    real_start, real_spawn = wire_module.WireServer.start, wire_module.WireServer._spawn

    def start(self: wire_module.WireServer, coro: Any) -> None:
        started.append(coro.__qualname__)
        real_start(self, coro)

    def spawn(self: wire_module.WireServer, coro: Any) -> Any:
        started.append(coro.__qualname__)
        return real_spawn(self, coro)

    monkeypatch.setattr(wire_module.WireServer, "start", start)
    monkeypatch.setattr(wire_module.WireServer, "_spawn", spawn)
    return started


@pytest.mark.parametrize("mode", ["sse", "resumable"])
async def test_a_def_tool_is_answered_over_sse_with_no_task(
    mode: str, writers: list[sse_wire.SseWriter], wire_tasks: list[str]
) -> None:
    tools = Tools()
    store = {"event_store": None} if mode == "sse" else {}  # "sse": not resumable, no ids
    async with (
        serving(tools, response_mode=mode, **store) as (url, _),
        httpx.AsyncClient(timeout=10) as client,
    ):
        headers = await open_session(client, url)
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


async def test_an_event_before_the_answer_is_written_before_the_answer_comes(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="resumable") as (url, _), httpx.AsyncClient(timeout=10) as client:
        headers = await open_session(client, url)
        with anyio.fail_after(10):
            request = client.build_request("POST", url, json=call("note", rid=4), headers=headers)
            response = await client.send(request, stream=True)
            try:
                got = b""
                chunks = response.aiter_raw()
                async for chunk in chunks:  # the log arrives while the tool still waits
                    got += chunk
                    if b"notifications/message" in got and got.endswith(b"\n\n"):
                        break
                assert not tools.gate.is_set()
                tools.gate.set()
                got += b"".join([chunk async for chunk in chunks])
            finally:
                await response.aclose()
    text = got.decode()
    assert [m.get("method") for m in messages(text)] == ["notifications/message", None]
    assert messages(text)[1]["result"]["content"] == [{"type": "text", "text": "noted"}]
    assert len(writers) == 1


async def test_a_progress_token_is_still_answered_by_the_full_path_with_progress_first(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="sse") as (url, _), httpx.AsyncClient(timeout=10) as client:
        headers = await open_session(client, url)
        body = call("echo", {"text": "p"}, rid=5, progressToken="tok")
        response = await client.post(url, json=body, headers=headers)
    got = messages(response.text)
    assert got[-1]["result"]["content"] == [{"type": "text", "text": "p"}]
    assert writers == []  # a progress token is declined by the fast path


async def test_a_slow_client_holds_back_the_producer_not_the_servers_memory(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="sse") as (url, _), httpx.AsyncClient(timeout=10) as client:
        headers = await open_session(client, url)
        host, port = url.split("/")[2].split(":")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
        reader, writer = await asyncio.open_connection(sock=sock)
        try:
            data = json.dumps(call("flood", rid=6)).encode()
            head = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
            writer.write(
                b"POST /mcp HTTP/1.1\r\nhost: %s\r\n%scontent-length: %d\r\n\r\n%s"
                % (url.split("/")[2].encode(), head, len(data), data)
            )
            with anyio.fail_after(10):
                await until(lambda: bool(writers) and writers[0].room() is not None)  # the socket is full
                out = writers[0]._out
                assert isinstance(out, wire_module._Out)
                transport = out._connection.transport
                assert transport is not None
                stalled = tools.logged
                for _ in range(200):  # the loop runs on; the producer waits for room
                    await anyio.sleep(0)
                assert tools.logged == stalled < _LOGS
                # what the server holds: its write buffer (past the high-water mark by at most one write)
                assert transport.get_write_buffer_size() < 1024 * 1024
                assert writers[0].queued() <= 1
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # now read it quickly
                text = b""
                while not text.endswith(b"0\r\n\r\n"):  # now read it all: the rest comes
                    chunk = await reader.read(1 << 20)
                    assert chunk
                    text += chunk
        finally:
            writer.close()
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
    async with serving(tools, **options) as (url, app), httpx.AsyncClient(timeout=10) as client:
        headers = await open_session(client, url)
        with anyio.fail_after(10):
            request = client.build_request(
                "POST", url, json=call("hold", {"text": "x"}, rid=7), headers=headers
            )
            response = await client.send(request, stream=True)
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
    async with (
        serving(tools, response_mode="resumable") as (url, app),
        httpx.AsyncClient(timeout=10) as client,
    ):
        headers = await open_session(client, url)
        with anyio.fail_after(10):
            request = client.build_request(
                "POST", url, json=call("hold", {"text": "back"}, rid=9), headers=headers
            )
            response = await client.send(request, stream=True)
            first = b""
            async for chunk in response.aiter_raw():
                first += chunk
                if b"\n\n" in first:
                    break
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
    async with (
        serving(tools, response_mode="sse", keepalive=0.01) as (url, _),
        httpx.AsyncClient(timeout=10) as client,
    ):
        headers = await open_session(client, url)
        with anyio.fail_after(10):
            request = client.build_request(
                "POST", url, json=call("hold", {"text": "k"}, rid=10), headers=headers
            )
            response = await client.send(request, stream=True)
            try:
                got = b""
                chunks = response.aiter_raw()
                async for chunk in chunks:
                    got += chunk
                    if got.count(b": keepalive\n\n") >= 2:
                        break
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
    async with serving(tools, **options) as (url, app), httpx.AsyncClient(timeout=10) as client:
        headers = await open_session(client, url)
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
