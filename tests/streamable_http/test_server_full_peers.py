"""The full ASGI path (`SseReply`, `PostHandler`) served by uvicorn, with peers that misbehave: a client that
stops reading an SSE answer holds back the handler writing to it (the stream's pipe stays bounded) and then
gets every event in order; a client that leaves while its POST waits for a JSON answer has its handler
cancelled once, at once, not when the answer or `stream_after` comes.

Nothing here waits for time to pass: tools wait on gates, and the test waits for what it needs to see
(bounded by `fail_after`); a small receive buffer on the client's socket fills the server's.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from typing import Any

import anyio
import pytest

from mcpframe.http import handling
from mcpframe.http.pipe import MeteredPipe, Pipe
from mcpframe.http.streams import Stream
from mcpframe.server import Context

from ._live_support import GatedTools, post_streamed, serving, slow_client, until
from ._server_support import call, messages, raw_post

pytestmark = pytest.mark.anyio

_BIG = 32 * 1024  # one log event's payload
_LOGS = 400  # ... and how many: ~13 MB, far more than the pipe, the lane's outbox and the sockets hold


class Tools(GatedTools):
    """`GatedTools` (`hold` waits on the gate) with `flood`, which floods its client with logs."""

    def __init__(self) -> None:
        super().__init__("full-peers")
        self.logged = 0
        tools = self

        @self.server.tool
        async def flood(ctx: Context) -> str:
            """Logs `_LOGS` big messages, numbered, as fast as it may."""
            await anyio.sleep(0)
            for number in range(_LOGS):
                await ctx.info(f"{number:04d}" + "x" * _BIG)
                tools.logged += 1
            return "flooded"


on_uvicorn = functools.partial(serving, http_server="uvicorn")
"""`_live_support.serving` on uvicorn: the full ASGI path."""


@pytest.fixture
def pipes(monkeypatch: pytest.MonkeyPatch) -> list[Pipe]:
    """The pipe of every SSE response a `Stream` was attached to."""
    attached: list[Pipe] = []
    real = Stream.attach

    async def attach(self: Stream, *, retry_ms: int | None) -> Pipe:
        pipe = await real(self, retry_ms=retry_ms)
        attached.append(pipe)
        return pipe

    monkeypatch.setattr(Stream, "attach", attach)
    return attached


def _dechunk(raw: bytes) -> bytes:
    """The body of one chunked HTTP/1.1 response (head included in `raw`), up to its last chunk."""
    rest = raw.split(b"\r\n\r\n", 1)[1]
    body = b""
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            return body
        body, rest = body + rest[:size], rest[size + 2 :]


def _full(pipe: Pipe) -> bool:
    return isinstance(pipe, MeteredPipe) and pipe.size >= pipe.limit


async def test_a_client_that_stops_reading_holds_back_its_handler_not_the_servers_memory(
    pipes: list[Pipe],
) -> None:
    tools = Tools()
    async with on_uvicorn(tools, response_mode="sse", event_store=None) as (url, app, _client, headers):
        pipes.clear()  # the initialize's
        async with slow_client(url, headers) as slow:
            slow.post(call("flood", rid=6))
            with anyio.fail_after(60):
                # the pipe fills up, then the handler waits: it cannot finish while nobody reads
                await until(lambda: bool(pipes) and (_full(pipes[0]) or tools.logged == _LOGS))
            assert tools.logged < _LOGS  # (an unbounded pipe took all ~13 MB, and the handler finished)
            pipe = pipes[0]
            assert isinstance(pipe, MeteredPipe)
            assert pipe.peak < pipe.limit + _BIG + 1024  # at most one event past its high-water mark
            with anyio.fail_after(60):
                raw = await slow.read_until(b"\r\n0\r\n\r\n", 1)
        assert tools.logged == _LOGS
        assert pipe.peak < pipe.limit + _BIG + 1024
        got = messages(_dechunk(raw).decode())
        logs = [m["params"]["data"][:4] for m in got if m.get("method") == "notifications/message"]
        assert logs == [f"{n:04d}" for n in range(_LOGS)]  # every one, in order
        assert got[-1]["id"] == 6
        assert got[-1]["result"]["content"] == [{"type": "text", "text": "flooded"}]
        assert app.posts.admission.running == 0


@pytest.fixture
def watching(monkeypatch: pytest.MonkeyPatch) -> anyio.Event:
    """Set once a JSON wait starts watching its client for leaving (`_LEAVING_AFTER` into the wait)."""
    armed = anyio.Event()
    real = handling.watch_disconnect

    def watch(receive: Any, callback: Any) -> Any:
        stop = real(receive, callback)
        armed.set()
        return stop

    monkeypatch.setattr(handling, "watch_disconnect", watch)
    return armed


@pytest.mark.parametrize(
    ("watched", "again_id"),  # the next call's id: the cancelled one's again, or a new one
    [(False, 10), (True, 11)],
    ids=["during-the-json-wait", "once-it-is-watched"],
)
@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"])
async def test_a_client_that_leaves_has_its_handler_cancelled_once(
    accept: str, watched: bool, again_id: int, watching: anyio.Event, caplog: pytest.LogCaptureFixture
) -> None:
    tools = Tools()
    # stream_after: far longer than the test; only the client leaving can end the wait
    async with on_uvicorn(tools, response_mode="auto", stream_after=3600.0) as (url, app, client, headers):
        host, port = url.split("/")[2].split(":")
        with caplog.at_level(logging.WARNING), anyio.fail_after(10):
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw_post(url, {**headers, "accept": accept}, call("hold", {"text": "x"}, rid=10)))
            await tools.entered.wait()
            if watched:
                await (
                    watching.wait()
                )  # the watcher runs: the leaving below is what it sees, not a read before it
            writer.close()
            await until(lambda: tools.cancelled == 1 and app.posts.admission.running == 0)
        assert tools.finished == 0
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
        # the session, its lanes and the id go on serving; the cancelled handler is not run again
        tools.gate.set()
        again = await client.post(url, json=call("hold", {"text": "y"}, rid=again_id), headers=headers)
        assert json.loads(again.text)["result"]["content"] == [{"type": "text", "text": "y"}]
        assert (tools.cancelled, tools.finished) == (1, 1)


async def test_a_watched_json_wait_still_switches_to_sse_at_stream_after(watching: anyio.Event) -> None:
    tools = Tools()
    # stream_after past `_LEAVING_AFTER`: the client is watched first, then the answer turns to SSE
    stream_after = handling._LEAVING_AFTER + 0.25
    async with on_uvicorn(tools, response_mode="auto", stream_after=stream_after) as (
        url,
        app,
        client,
        headers,
    ):
        sse = {**headers, "accept": "application/json, text/event-stream"}
        with anyio.fail_after(10):
            response = await post_streamed(client, url, sse, call("hold", {"text": "late"}, rid=12))
            try:
                # the head came while the handler still waits on its gate: the wait switched to SSE
                assert watching.is_set()
                assert tools.finished == 0
                assert response.headers["content-type"].startswith("text/event-stream")
                tools.gate.set()
                body = (await response.aread()).decode()
            finally:
                await response.aclose()
        got = messages(body)
        assert got[-1]["id"] == 12
        assert got[-1]["result"]["content"] == [{"type": "text", "text": "late"}]
        assert (tools.cancelled, tools.finished) == (0, 1)
        assert app.posts.admission.running == 0
