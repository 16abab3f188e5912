"""The review's findings on proxy --listen's stateless bridge (and `SessionBridge.abandon`), each pinned:

- a malformed `progressToken` from the shared child (unhashable: a list) is dropped, the reader goes on;
- a POST's requests are cancelled at the child once, however many times its stream is given up;
- a JSON-only client gets nothing kept for it but its answer;
- a client that reads its SSE answer, only slower than the child writes progress, is not cut: it gets the
  newest progress and its answer (the cut of one that stops reading: test_listen_stateless_slow.py).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import in_process_proxy, modern_call, modern_headers

from mcpframe import core
from mcpframe.http.streams import Stream
from mcpframe.proxy import listen_stateless
from mcpframe.proxy.listen_bridge import Route, SessionBridge
from mcpframe.proxy.listen_stateless import StatelessBridge

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Child:
    """What the bridges write to, recorded."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.returncode = None

    async def write(self, data: bytes) -> None:
        self.writes.append(data)


async def test_an_unhashable_progress_token_is_dropped_not_fatal() -> None:
    bridge = StatelessBridge(None, max_frame=1 << 20, spawn=None)  # type: ignore[arg-type]
    route = Route(Stream(None, None), [1], [1])
    bridge.pending[1] = (route, 7)
    bridge.tokens[1] = (route, b'"tok"')  # as `handle` seeds it: the child knows the token as upstream id 1
    raw = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":[1],"progress":1}}'
    [item] = core.decode(raw, lazy=True)
    await bridge._route(item)  # raised TypeError (unhashable list) before
    assert route.stream.response_frames() == []
    assert not route.stream.saw_other  # nothing reached the POST that waits


async def test_a_route_abandoned_twice_is_cancelled_at_the_child_once() -> None:
    """A child's notification and the client's leaving in one loop turn both gave the stream up: the
    second `abandon` must not send a second cancel for the same request."""
    bridge = SessionBridge(max_frame=1 << 20)
    child = _Child()
    bridge.child = child  # type: ignore[assignment]
    route = Route(Stream(None, None), [7], [])
    bridge.pending[7] = route
    route.on_close.append(lambda: bridge._forget(route))
    await asyncio.gather(bridge.abandon(route), bridge.abandon(route))
    await bridge.abandon(route)
    cancels = [w for w in child.writes if b"notifications/cancelled" in w]
    assert len(cancels) == 1
    assert b'"requestId":7' in cancels[0]


async def test_abandon_cancels_only_the_requests_still_the_routes() -> None:
    bridge = SessionBridge(max_frame=1 << 20)
    child = _Child()
    bridge.child = child  # type: ignore[assignment]
    route = Route(Stream(None, None), [7, 8], [])
    bridge.pending[7] = route
    other: Any = Route(Stream(None, None), [8], [])
    bridge.pending[8] = other  # id 8 is another POST's now (the route's was answered and reused)
    route.on_close.append(lambda: bridge._forget(route))
    await bridge.abandon(route)
    cancels = [w for w in child.writes if b"notifications/cancelled" in w]
    assert len(cancels) == 1
    assert b'"requestId":7' in cancels[0]
    assert bridge.pending[8] is other
    await anyio.sleep(0)


def _progress(token: int, number: int, size: int = 16) -> Any:
    params = {"progressToken": token, "progress": number, "message": "x" * size}
    [item] = core.decode(core.encode_notification("notifications/progress", params), lazy=True)
    return item


async def test_nothing_but_its_answer_is_kept_for_a_json_only_client() -> None:
    """A POST whose client takes no SSE can never receive a notification: the shared child's progress
    and log lines for it are dropped, not kept (they piled up without bound), and its answer still comes."""
    bridge = StatelessBridge(None, max_frame=1 << 20, spawn=None)  # type: ignore[arg-type]
    route = Route(Stream(None, None), [1], [1])
    bridge.pending[1] = (route, 7)
    bridge.tokens[1] = (route, b'"tok"')  # as `handle` seeds it: the child knows the token as upstream id 1
    bridge.json_only.add(route)
    route.on_close.append(lambda: bridge._forget(route, 1))
    for number in range(64):
        await bridge._route(_progress(1, number, 16384))
    [log] = core.decode(b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}', lazy=True)
    await bridge._route(log)
    assert route.stream._backlog == []
    [answer] = core.decode(b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', lazy=True)
    await bridge._route(answer)
    assert route.closed
    assert [core.decode(f)[0].id for f in route.stream.response_frames()] == [7]
    assert route not in bridge.json_only
    assert not bridge.pending


_STEADY_CHILD = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "tools/call":
        token = message["params"]["_meta"]["progressToken"]
        for number in range(1024):  # 16 MiB of progress, written as fast as the pipe takes it
            params = {"progressToken": token, "progress": number, "message": "x" * 16384}
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
            sys.stdout.write(json.dumps(note) + "\n")
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
"""


async def test_a_client_that_reads_slower_than_the_child_writes_gets_the_newest_progress_and_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # only a client that takes nothing for this long is cut: this one reads all along, however loaded the box
    monkeypatch.setattr(listen_stateless, "STALL_AFTER", 60.0)
    child = tmp_path / "child.py"
    child.write_text(_STEADY_CHILD)
    got = b""
    async with (
        in_process_proxy([sys.executable, str(child)], pool_size=1) as proxy,
        httpx.AsyncClient(timeout=60) as http,
    ):
        with anyio.fail_after(60):
            body = modern_call("flood", 7, {}, progressToken="tok")
            async with http.stream("POST", proxy.url, json=body, headers=modern_headers("flood")) as response:
                async for chunk in response.aiter_raw(16384):
                    got += chunk
                    await anyio.sleep(0.005)  # slower than the child writes
        assert not proxy.app.stateless.pending
        assert not proxy.app.stateless.behind
    events = [json.loads(line[6:]) for line in got.decode().split("\n") if line.startswith("data: ")]
    assert events[-1] == {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}  # answered, not cut
    numbers = [e["params"]["progress"] for e in events[:-1]]
    assert all(e["method"] == "notifications/progress" for e in events[:-1])
    assert numbers == sorted(numbers)  # a later value replaced an earlier one unsent: never out of order
    assert numbers[-1] == 1023  # the newest progress went out before the answer
