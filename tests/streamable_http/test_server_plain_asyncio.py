"""The lean server run by plain `asyncio.run` (no `anyio.run`, so no async library named in the context):
the fast path runs in the protocol's callbacks, where no task runs, and must not need one."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from typing import Any

import httpx
import pytest
import sniffio

from mcpframe.http import fast as fast_module
from mcpframe.http.server import HttpOptions, StreamableHTTPServer, serve_http
from mcpframe.server import Server

from ._fast_support import record_fast_posts
from ._server_support import JSON_AND_SSE, call, modern_meta


async def _five_stateless_calls() -> list[Any]:
    """Serve an echo tool on the lean server, POST five 2026-07-28 calls; what each got, and the stateless
    lanes (live, idle) after each."""
    server = Server("plain", version="1.0.0")

    @server.tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    options = HttpOptions(response_mode="auto")
    app = StreamableHTTPServer(server, options)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    run = serve_http(server, port=0, options=options, ready=ready.set_result, http_server="mcpframe", app=app)
    serving = asyncio.create_task(run)
    got: list[Any] = []
    try:
        url = await asyncio.wait_for(ready, 10)
        headers = {**JSON_AND_SSE, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
        async with httpx.AsyncClient(timeout=10) as client:
            for rid in range(1, 6):
                body = call("echo", {"text": f"p{rid}"}, rid=rid, **modern_meta())
                response = await client.post(url, json=body, headers={**headers, "mcp-name": "echo"})
                pool = app.posts.stateless_lanes()
                got.append((response.status_code, response.text, pool.live, len(pool._idle)))
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    return got


def _in_plain_asyncio_run() -> list[Any]:
    """`_five_stateless_calls()` under `asyncio.run`, in a new thread with an empty context."""
    result: list[Any] = []

    def run() -> None:  # a new thread and an empty context: nothing inherited names asyncio to sniffio
        assert sniffio.thread_local.name is None
        result.extend(contextvars.Context().run(asyncio.run, _five_stateless_calls()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    return result


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the fast path took each POST it was asked about."""
    return record_fast_posts(monkeypatch, lambda got: got is not None)


def test_stateless_calls_on_the_lean_server_under_plain_asyncio_run(taken: list[bool]) -> None:
    result = _in_plain_asyncio_run()
    assert [status for status, *_ in result] == [200] * 5, result
    for rid, (_status, text, _live, _idle) in enumerate(result, 1):
        assert f'"p{rid}"' in text
    assert {(live, idle) for _s, _t, live, idle in result} == {(1, 1)}  # one lane, reused: none lost
    assert taken == [False] + [True] * 4  # the first makes the lane the others find idle


def test_a_stateless_start_that_fails_ends_its_lane(
    monkeypatch: pytest.MonkeyPatch, taken: list[bool]
) -> None:
    real = fast_module._bind
    calls: list[int] = []

    def bind_once_broken(conn: Any, lane: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        real(conn, lane)

    monkeypatch.setattr(fast_module, "_bind", bind_once_broken)
    result = _in_plain_asyncio_run()
    assert [status for status, *_ in result] == [200, 500, 200, 200, 200]
    # the failed one's lane ended rather than staying live and out of the pool: a new one took its place
    assert [(live, idle) for _s, _t, live, idle in result][2:] == [(1, 1)] * 3
    assert taken == [False, False, True, True]  # (the second raised: not recorded) the third made a lane
