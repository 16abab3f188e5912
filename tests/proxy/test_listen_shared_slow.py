"""`--multiplex shared`: a session whose client stops reading must not stall the others, nor grow the proxy.

The shared child's one reader serves every session, so it never waits for one: what it routes to a session
is queued for that session's own task, which writes it as fast as the client reads. A session with more
than `SharedUpstream.max_unread` bytes queued is cut: its requests are cancelled at the child, each is
answered with a -32000 error, the session ends. The child here is made for it: `flood` writes 16 KiB
progress notifications (a first burst, then more once another session calls `go`, until cancelled),
`quick` one progress notification and its answer. Nothing waits for time: the test waits for the proxy's
own counters (`SharedBridge.unread`, `cut_sessions`) and the child's record, bounded by `fail_after`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.streamable_http._live_support import slow_client

from mcpframe.proxy.listen_shared_session import SharedBridge

from ._listen_support import BOTH, dechunk, in_process_proxy, rpc
from ._shared_support import call, initialize, sse_post, until

pytestmark = pytest.mark.anyio

_CHILD = r"""
import json, sys, threading

lock = threading.Lock()
cancelled = set()
go = threading.Event()
record = open(sys.argv[1], "a", buffering=1)

def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

def progress(token, number, size):
    params = {"progressToken": token, "progress": number, "message": "x" * size}
    send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

def flood(rid, token):
    number = 0
    for number in range(512):  # 8 MiB (more than the sockets between the proxy and the client hold)
        progress(token, number, 16384)
    go.wait()
    while rid not in cancelled:
        number += 1
        progress(token, number, 16384)
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [], "flooded": number}})

for line in sys.stdin:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "flood", "version": "1"}}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "notifications/cancelled":
        cancelled.add(message["params"]["requestId"])
        record.write("cancelled %s\n" % json.dumps(message["params"]["requestId"]))
    elif method == "flood":
        record.write("flood %s\n" % json.dumps(rid))
        token = message["params"]["_meta"]["progressToken"]
        threading.Thread(target=flood, args=(rid, token), daemon=True).start()
    elif method == "go":
        go.set()
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "quick":
        progress(message["params"]["_meta"]["progressToken"], 1, 10)
        send({"jsonrpc": "2.0", "id": rid, "result": {"text": message["params"]["text"]}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
"""

_LIMIT = 16 << 20  # the slow session's bound (bytes queued for it), set on the proxy under test
_CALLS = 5


async def _quick(http: httpx.AsyncClient, url: str, headers: dict[str, str], rid: int) -> None:
    """A `quick` call whose client takes SSE: its progress, then its answer."""
    body = rpc(rid, "quick", {"text": f"q{rid}", "_meta": {"progressToken": rid}})
    messages = await sse_post(http, url, headers, body)
    assert [m.get("method") for m in messages] == ["notifications/progress", None]
    assert messages[0]["params"]["progressToken"] == rid
    assert messages[-1] == {"jsonrpc": "2.0", "id": rid, "result": {"text": f"q{rid}"}}


async def test_a_session_that_stops_reading_is_cut_and_the_others_keep_flowing(tmp_path: Path) -> None:
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    record = tmp_path / "record.txt"
    record.write_text("")
    async with (
        in_process_proxy([sys.executable, str(child), str(record)], multiplex="shared") as proxy,
        httpx.AsyncClient(timeout=30) as http,
    ):
        shared = proxy.app.shared
        assert shared is not None
        shared.max_unread = _LIMIT
        slow_headers, _ = await initialize(http, proxy.url)
        others = [(await initialize(http, proxy.url))[0] for _ in range(2)]
        [slow_bridge] = [b for b in shared.sessions.values() if b.http.id == slow_headers["mcp-session-id"]]
        async with slow_client(proxy.url, {**BOTH, **slow_headers}) as slow:
            slow.post(rpc(7, "flood", {"_meta": {"progressToken": "slow"}}))
            with anyio.fail_after(30):
                # the first burst waits for the slow client: its session's task is stuck on its socket
                await until(lambda: slow_bridge.unread >= 1 << 20)
                async with anyio.create_task_group() as tg:
                    for n, headers in enumerate(others):
                        for rid in range(_CALLS):
                            tg.start_soon(_quick, http, proxy.url, headers, 100 * n + rid)
                assert slow_bridge.cut is None
                assert slow_bridge.unread >= 1 << 20  # still stuck: the others went on without it
                assert (await call(http, proxy.url, others[0], rpc(50, "go")))["result"] == {}
                await until(lambda: shared.cut_sessions == 1)
                await until(lambda: "cancelled" in record.read_text())
                for n, headers in enumerate(others):  # the others are answered after the cut as well
                    await _quick(http, proxy.url, headers, 100 * n + 99)
                raw = await slow.read_until(b"\r\n0\r\n\r\n", 1)
            # the cut session is gone: its client's next request gets 404
            gone = await http.post(proxy.url, json=rpc(8, "quick"), headers={**BOTH, **slow_headers})
            assert gone.status_code == 404
    assert slow_bridge.cut is not None
    assert slow_bridge.peak_unread <= _LIMIT + 17_000  # the bound, plus the one frame that crossed it
    assert not slow_bridge.outbox
    events = [line[6:] for line in dechunk(raw).decode().split("\n") if line.startswith("data: ")]
    last: dict[str, Any] = json.loads(events[-1])
    assert last["id"] == 7
    assert last["error"]["code"] == -32000
    assert "too slowly" in last["error"]["message"]
    lines = record.read_text().splitlines()
    [flood] = [line.split(" ", 1)[1] for line in lines if line.startswith("flood ")]
    assert [line for line in lines if line.startswith("cancelled ")] == [f"cancelled {flood}"]
    assert proxy.app.pool.spawned == 1  # one child served every session throughout
    assert isinstance(slow_bridge, SharedBridge)
