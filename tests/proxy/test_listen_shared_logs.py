"""`--multiplex shared`: a log line of the shared child (`notifications/message`) goes to the request most
likely to have caused it (the newest waiting) and to every other open session's GET stream: the child's log
is the server's, and `logging/setLevel` already sets its one level for every session."""

from __future__ import annotations

import anyio
import httpx
import pytest
from tests.proxy._listen_support import rpc
from tests.proxy._shared_support import get_stream, initialize, shared_proxy, sse_post
from tests.proxy.conftest import PEER

pytestmark = pytest.mark.anyio


async def test_a_log_line_reaches_the_calling_request_and_every_other_sessions_get_stream() -> None:
    log = {"level": "warning", "logger": "peer", "data": "disk almost full"}
    notification = {"jsonrpc": "2.0", "method": "notifications/message", "params": log}
    other = {"jsonrpc": "2.0", "method": "test/other", "params": {"n": 1}}
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        a, b, c = [(await initialize(http, proxy.url))[0] for _ in range(3)]
        with anyio.fail_after(20):
            async with get_stream(http, proxy.url, b) as b_events, get_stream(http, proxy.url, c) as c_events:
                body = rpc(
                    1,
                    "notify",
                    {"notifications": [[n["method"], n["params"]] for n in (notification, other)]},
                )
                messages = await sse_post(http, proxy.url, a, body)
                changed = ["notifications/tools/list_changed", {}]
                await sse_post(http, proxy.url, a, rpc(2, "notify", {"notifications": [changed]}))
                got = [[await events.receive() for _ in range(2)] for events in (b_events, c_events)]
    assert messages == [notification, other, {"jsonrpc": "2.0", "id": 1, "result": {}}]
    # what is not a log line stays with the request: b and c got the log line, then the list_changed
    listed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
    assert got == [[notification, listed], [notification, listed]]


async def test_a_log_line_reaches_no_session_of_another_principal() -> None:
    log = {"level": "info", "data": "for one principal"}
    changed = ["notifications/tools/list_changed", {}]
    async with shared_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        shared = proxy.app.shared
        assert shared is not None
        a, b = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        with anyio.fail_after(20):
            async with get_stream(http, proxy.url, b) as b_events:
                # b's session now stands for another principal (as an authenticated one would)
                [b_bridge] = [s for s in shared.sessions.values() if s.http.id == b["mcp-session-id"]]
                b_bridge.http.owner = "someone else"
                body = rpc(1, "notify", {"notifications": [["notifications/message", log], changed]})
                await sse_post(http, proxy.url, a, body)
                first = await b_events.receive()
    assert first["method"] == "notifications/tools/list_changed"  # the log line did not come before it
