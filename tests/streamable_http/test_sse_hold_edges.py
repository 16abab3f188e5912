"""Edges of the lean server's held SSE head (`http/sse_wire.py`'s `HOLD`).

The hold counts toward the first quiet wait (SSE polling's `close_idle`, or the keep-alive): it is at
most half that wait, and once it runs out the quiet timer waits only for the rest, so a quiet resumable
stream closes `close_idle` after the POST, not `HOLD` later. The priming event is written before
anything put on the writer, whenever that was put. A graceful stop of the lean server gives every
connection longer than any hold, so a held head and its priming event go out before it cuts. A stop
during an SSE answer nobody can resume cancels its handler once, with nothing failing on the way.

The timer tests drive one `SseWriter` by hand and look at which shared timer (`Deadlines`) holds its entry,
never at the clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import threading
from typing import Any

import httpx
import pytest

from mcpframe.http import server as http_server
from mcpframe.http import sse_wire
from mcpframe.http.deadlines import Deadlines
from mcpframe.http.options import HttpOptions
from mcpframe.http.server import StreamableHTTPServer, serve_http
from mcpframe.http.streams import Stream

from ._lean_support import Tools
from ._server_support import call, open_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Out:
    """A `StreamOut` that keeps what it was given."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.ended: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def end(self, last: bytes = b"") -> None:
        self.ended.append(last)

    def room(self) -> asyncio.Future[None] | None:
        return None


def _writer(close_idle: float | None, keepalive: float = 15.0) -> sse_wire.SseWriter:
    ends: list[int] = []
    return sse_wire.SseWriter(
        Stream(None, None), b"", keepalive=keepalive, close_idle=close_idle, on_end=lambda: ends.append(1)
    )


def _waits_on(writer: sse_wire.SseWriter, wait: float) -> bool:
    """Whether the writer's live timer entry is on the shared timer of `wait` seconds."""
    entry = writer._entry
    return entry is not None and entry[1] is not None and any(e is entry for e in Deadlines.of(wait)._queue)


@pytest.mark.parametrize(("close_idle", "hold"), [(4.0, sse_wire.HOLD), (0.03, 0.015)])
async def test_the_hold_is_part_of_the_first_quiet_wait(close_idle: float, hold: float) -> None:
    writer = _writer(close_idle)
    writer.first = b"priming"
    out = _Out()
    writer.opened(out)
    try:
        assert _waits_on(writer, hold)  # at most half the quiet wait
        assert out.written == []
        entry = writer._entry
        assert entry is not None
        entry[1]()  # the hold runs out: the head goes out with the priming event
        assert out.written == [b"priming"]
        assert _waits_on(writer, close_idle - hold)  # the rest of the quiet wait, not a whole one
        assert not _waits_on(writer, close_idle)
        writer.put(b"event")
        writer._flush()  # something written: the quiet wait starts over, whole
        assert out.written == [b"priming", b"event"]
        assert _waits_on(writer, close_idle)
    finally:
        writer.close()
    assert writer._entry is None


async def test_an_event_written_with_the_held_head_restarts_the_whole_quiet_wait() -> None:
    writer = _writer(4.0)
    writer.first = b"priming"
    out = _Out()
    writer.opened(out)
    try:
        writer.put(b"event")  # its loop turn's `_flush` is scheduled: the hold runs out first here
        entry = writer._entry
        assert entry is not None
        entry[1]()
        assert out.written == [b"primingevent"]
        assert _waits_on(writer, 4.0)
    finally:
        writer.close()


async def test_the_keepalive_wait_counts_the_hold_too() -> None:
    writer = _writer(None, keepalive=0.01)
    writer.opened(_Out())
    try:
        assert _waits_on(writer, 0.005)
        entry = writer._entry
        assert entry is not None
        entry[1]()
        assert _waits_on(writer, 0.005)
    finally:
        writer.close()


async def test_the_priming_event_goes_before_what_was_put_first() -> None:
    writer = _writer(4.0)
    writer.first = b"priming"
    writer.put(b"event")  # before the response opened (no loop turn runs between them today)
    out = _Out()
    writer.opened(out)
    writer.close()
    assert out.ended == [b"primingevent"]


def test_a_graceful_stop_waits_longer_than_any_hold() -> None:
    # the lean server's stop gives connections `_FLUSH_AT_LEAST` seconds at least before cutting: a held
    # head (with its priming event) goes out in that time, never cut unwritten
    assert sse_wire.HOLD < http_server._FLUSH_AT_LEAST


async def _stop_during_a_held_call(mode: str) -> tuple[bytes, int]:
    """Serve `Tools` on the lean server (`grace` 0), POST `hold` on a connection of its own, stop the
    server while it waits; what that connection got, and how many times the handler was cancelled."""
    tools = Tools()
    store = {"event_store": None} if mode == "sse" else {}
    options = HttpOptions(response_mode=mode, **store)  # type: ignore[arg-type]
    app = StreamableHTTPServer(tools.server, options)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    run = serve_http(
        tools.server, port=0, options=options, ready=ready.set_result, grace=0, http_server="mcpframe",
        app=app,
    )  # fmt: skip
    serving = asyncio.create_task(run)
    try:
        url = await asyncio.wait_for(ready, 10)
        async with httpx.AsyncClient(timeout=10) as client:
            headers = await open_session(client, url)
        reader, writer = await _raw_post(url, headers, call("hold", {"text": "x"}, rid=5))
        await asyncio.wait_for(tools.entered.wait(), 10)
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(serving, 20)
    got = await _read_to_end(reader)
    writer.close()
    return got, tools.cancelled


def _in_plain_asyncio_run(mode: str) -> tuple[bytes, int]:
    """`_stop_during_a_held_call(mode)` under `asyncio.run`, in a new thread with an empty context: no
    async library named to sniffio, as under a server started by plain `asyncio.run`."""
    result: list[tuple[bytes, int]] = []

    def run() -> None:
        result.append(contextvars.Context().run(asyncio.run, _stop_during_a_held_call(mode)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    return result[0]


async def _raw_post(
    url: str, headers: dict[str, str], body: dict[str, Any]
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The POST on a connection of its own (kept open: the writer is returned, as its end closes it)."""
    host, port = url.split("/")[2].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
    writer.write(
        b"POST /mcp HTTP/1.1\r\nhost: %s:%s\r\n%scontent-length: %d\r\n\r\n%s"
        % (host.encode(), port.encode(), head, len(data), data)
    )
    return reader, writer


async def _read_to_end(reader: asyncio.StreamReader) -> bytes:
    got = b""
    while chunk := await asyncio.wait_for(reader.read(65536), 20):
        got += chunk
    return got


@pytest.mark.parametrize("mode", ["sse", "resumable"])
def test_a_stop_during_an_sse_answer_ends_it_and_cancels_its_handler_once(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcpframe"):
        got, cancelled = _in_plain_asyncio_run(mode)
    assert got.startswith(b"HTTP/1.1 200 OK\r\n"), got
    assert b"content-type: text/event-stream" in got
    if mode == "resumable":
        assert b"\r\nid: " in got  # the priming event: the client can resume
        assert b"retry: " in got
    assert cancelled == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
