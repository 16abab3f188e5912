"""`--sse-close-idle` through the listening proxy counts a POST's quiet from the POST, not from its SSE
response: a POST that waited quietly (the fast path's hold, or the wait for a plain JSON answer in
`auto` mode) opens its SSE response with the first quiet wait shortened by that time, on the loop's
shared timer for waits of that length (`mcpframe.http.deadlines`). The tests look at which timer the open
response waits on, not at the clock."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import Proxy, in_process_proxy
from tests.proxy.conftest import PEER

from mcpframe.http.deadlines import Deadlines
from mcpframe.http.options import HttpOptions

pytestmark = pytest.mark.anyio

BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
JSON_ONLY = {"accept": "application/json", "content-type": "application/json"}
CLOSE_IDLE = 4.0  # long enough that no wait here runs out while a test looks at it
STREAM_AFTER = 0.3
TOKEN = {"_meta": {"progressToken": "t"}}  # a request naming a progress token is the full path's


async def _session(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    response = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, headers=JSON_ONLY
    )
    assert response.status_code == 200, response.text
    headers = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=done, headers={**JSON_ONLY, **headers})).status_code == 202
    return headers


def _live(wait: float) -> int:
    """Timer entries of `wait` seconds on this loop still to fire (not cancelled)."""
    return sum(1 for entry in Deadlines.of(wait)._queue if entry[1] is not None)


async def _first_quiet_wait(
    http: httpx.AsyncClient, proxy: Proxy, headers: dict[str, str], params: dict[str, Any], expected: float
) -> None:
    """`slow` (never answered by the peer) opens its SSE stream with the priming event; the stream then
    waits on a timer of `expected` seconds (and on none of `CLOSE_IDLE`); the client's cancel ends it."""
    slow = {"jsonrpc": "2.0", "id": 5, "method": "slow", "params": params}
    with anyio.fail_after(10):
        async with http.stream("POST", proxy.url, json=slow, headers={**BOTH, **headers}) as r:
            assert r.status_code == 200
            assert r.headers["content-type"] == "text/event-stream"
            chunks = r.aiter_bytes()
            first = await chunks.__anext__()
            assert b"retry: " in first, first  # the priming event, nothing else came
            while _live(expected) == 0:  # the response's task waits right after writing it
                await anyio.sleep(0.001)
            assert _live(expected) == 1
            if expected != CLOSE_IDLE:
                assert _live(CLOSE_IDLE) == 0
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
            assert (await http.post(proxy.url, json=cancel, headers={**BOTH, **headers})).status_code == 202
            rest = b"".join([chunk async for chunk in chunks])
            assert b"data: {" not in rest  # no answer came
    assert proxy.app.posts.admission.running == 0


@pytest.mark.parametrize("fast", [True, False], ids=["fast hold", "full path"])
async def test_a_held_post_that_prefers_sse_counts_its_quiet_from_the_post(
    http: httpx.AsyncClient, fast: bool
) -> None:
    """The fast path holds the POST `sse_hold` for a whole answer first; the full path opens the SSE
    response at once (nothing to take off)."""
    options = HttpOptions(close_idle_streams=CLOSE_IDLE)
    params = {} if fast else TOKEN
    async with in_process_proxy(PEER, http=options) as proxy:
        headers = await _session(http, proxy.url)
        hold = proxy.app.fast.sse_hold
        expected = CLOSE_IDLE - hold if fast else CLOSE_IDLE
        await _first_quiet_wait(http, proxy, headers, params, expected)
        assert proxy.app.fast.taken == (1 if fast else 0)


@pytest.mark.parametrize("fast", [True, False], ids=["fast hold", "full path"])
async def test_a_post_that_waited_for_json_in_auto_mode_counts_its_quiet_from_the_post(
    http: httpx.AsyncClient, fast: bool
) -> None:
    options = HttpOptions(response_mode="auto", stream_after=STREAM_AFTER, close_idle_streams=CLOSE_IDLE)
    params = {} if fast else TOKEN
    async with in_process_proxy(PEER, http=options) as proxy:
        headers = await _session(http, proxy.url)
        await _first_quiet_wait(http, proxy, headers, params, CLOSE_IDLE - STREAM_AFTER)
        assert proxy.app.fast.taken == (1 if fast else 0)


async def test_a_post_that_waited_the_whole_window_gets_a_stream_closed_after_its_priming(
    http: httpx.AsyncClient,
) -> None:
    """`stream_after` as long as the close window: the SSE response ends right after the priming event
    (the client resumes from it)."""
    options = HttpOptions(response_mode="auto", stream_after=STREAM_AFTER, close_idle_streams=STREAM_AFTER)
    async with in_process_proxy(PEER, http=options) as proxy:
        headers = await _session(http, proxy.url)
        slow = {"jsonrpc": "2.0", "id": 5, "method": "slow", "params": {}}
        with anyio.fail_after(10):
            response = await http.post(proxy.url, json=slow, headers={**BOTH, **headers})
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        lines = response.text.split("\n")
        assert lines[0].startswith("id: "), response.text
        assert lines[1].startswith("retry: "), response.text
        assert lines[2] == "data: ", response.text
        assert response.text.count("data:") == 1  # the priming event alone
        assert proxy.app.fast.taken == 1
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
        assert (await http.post(proxy.url, json=cancel, headers={**BOTH, **headers})).status_code == 202
