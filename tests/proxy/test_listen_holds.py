"""The listening proxy's waits for an answer on the loop's shared timers (`mcpframe.http.deadlines`): the fast
path's hold of a parked POST and the full path's `stream_after`. An answer within the wait leaves no live
timer entry behind; a wait that runs out still opens the POST's SSE stream, which a cancel then ends."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import BOTH, Proxy, in_process_proxy, open_session, rpc
from tests.proxy.conftest import PEER

from mcpframe.http.deadlines import Deadlines
from mcpframe.http.options import HttpOptions

pytestmark = pytest.mark.anyio

STREAM_AFTER = 0.2


def _live(wait: float) -> int:
    """Timer entries of `wait` seconds on this loop still to fire (not cancelled)."""
    return sum(1 for entry in Deadlines.of(wait)._queue if entry[1] is not None)


async def _slow_call_opens_its_stream(
    http: httpx.AsyncClient, proxy: Proxy, headers: dict[str, str], params: dict[str, Any]
) -> None:
    """`slow` (never answered by the peer): its POST's SSE stream opens once the wait ran out, and the
    client's cancel ends it."""
    with anyio.fail_after(10):
        slow = rpc(5, "slow", params)
        async with http.stream("POST", proxy.url, json=slow, headers={**BOTH, **headers}) as r:
            assert r.status_code == 200
            assert r.headers["content-type"] == "text/event-stream"
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
            assert (await http.post(proxy.url, json=cancel, headers={**BOTH, **headers})).status_code == 202
            await r.aread()
    assert proxy.app.posts.admission.running == 0


async def test_a_fast_call_answered_within_its_hold_leaves_no_live_timer(http: httpx.AsyncClient) -> None:
    async with in_process_proxy(PEER) as proxy:
        headers = await open_session(http, proxy.url)
        for rid in range(1, 4):
            response = await http.post(proxy.url, json=rpc(rid, "echo"), headers={**BOTH, **headers})
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
        assert proxy.app.fast.taken == 3
        assert _live(proxy.app.fast.sse_hold) == 0
        await _slow_call_opens_its_stream(http, proxy, headers, {})
        assert proxy.app.fast.taken == 4
        assert _live(proxy.app.fast.sse_hold) == 0


@pytest.mark.parametrize("fast", [True, False], ids=["fast hold", "full path"])
async def test_stream_after_in_auto_mode_answers_json_in_time_and_opens_sse_past_it(
    http: httpx.AsyncClient, fast: bool
) -> None:
    options = HttpOptions(response_mode="auto", stream_after=STREAM_AFTER)
    # a request naming a progress token is the full path's (`listen_fast._plain`)
    params = {} if fast else {"_meta": {"progressToken": "t"}}
    async with in_process_proxy(PEER, http=options) as proxy:
        headers = await open_session(http, proxy.url)
        response = await http.post(proxy.url, json=rpc(1, "echo", params), headers={**BOTH, **headers})
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.json()["id"] == 1
        assert proxy.app.fast.taken == (1 if fast else 0)
        assert _live(STREAM_AFTER) == 0
        await _slow_call_opens_its_stream(http, proxy, headers, params)
        assert proxy.app.fast.taken == (2 if fast else 0)
        assert _live(STREAM_AFTER) == 0
