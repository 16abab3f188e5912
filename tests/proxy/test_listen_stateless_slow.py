"""Stateless (2026-07-28) clients share one upstream child through the listening proxy, and its one reader
serves them all: a client that stops reading its SSE answer while the child floods it with progress must not
hold back the others' answers, nor grow the proxy without bound. Its POST is cut (a -32000 error ends its
answer) and its request is cancelled upstream.

The child is a small NDJSON server made for this: `flood` writes big progress notifications (its token's)
from a thread until it is cancelled, `quick` answers at once. Nothing waits for time to pass: the test waits
for what it needs to see, bounded by `fail_after`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from tests.streamable_http._live_support import slow_client, until

from mcpframe.http.pipe import MeteredPipe, Pipe
from mcpframe.proxy import listen_stateless

from ._listen_support import attached_pipes, dechunk, in_process_proxy, modern_call, modern_headers

pytestmark = pytest.mark.anyio

_CHILD = r"""
import json, sys, threading

lock = threading.Lock()
cancelled = set()
record = open(sys.argv[1], "a", buffering=1) if len(sys.argv) > 1 else None

def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

def flood(rid, token):
    number = 0
    while rid not in cancelled:
        params = {"progressToken": token, "progress": number, "message": "x" * 16384}
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        number += 1
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [], "flooded": number}})

for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "notifications/cancelled":
        cancelled.add(message["params"]["requestId"])
        if record is not None:
            record.write("cancelled %s\n" % json.dumps(message["params"]["requestId"]))
    elif method == "tools/call" and message["params"]["name"] == "flood":
        token = message["params"]["_meta"]["progressToken"]
        if record is not None:
            record.write("flood %s\n" % json.dumps(message["id"]))
        threading.Thread(target=flood, args=(message["id"], token), daemon=True).start()
    elif "id" in message:
        text = message["params"]["arguments"]["text"]
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": text}]}})
"""


def _held(pipe: Pipe) -> int:
    assert isinstance(pipe, MeteredPipe)
    return pipe.size


def _over_limit(pipe: Pipe) -> bool:
    return isinstance(pipe, MeteredPipe) and pipe.size >= pipe.limit


@pytest.fixture
def pipes(monkeypatch: pytest.MonkeyPatch) -> list[Pipe]:
    return attached_pipes(monkeypatch)


async def test_a_stateless_client_that_stops_reading_is_cut_and_the_others_are_answered(
    tmp_path: Path, pipes: list[Pipe], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listen_stateless, "STALL_AFTER", 0.5)  # it never reads: any stall bound will do
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    record = tmp_path / "record.txt"
    async with (
        in_process_proxy([sys.executable, str(child), str(record)], pool_size=1) as proxy,
        slow_client(proxy.url, modern_headers("flood")) as slow,
        httpx.AsyncClient(timeout=20) as http,
    ):
        slow.post(modern_call("flood", 7, {}, progressToken="slow"))
        with anyio.fail_after(20):
            # the slow client's pipe is at its limit: a reader that waited for its room would wait here
            await until(lambda: bool(pipes) and _over_limit(pipes[0]))
            for number in range(5):  # the others' calls are answered meanwhile and after the cut
                if number == 3:  # the flood goes on up to the mark, where the slow POST is cut
                    await until(lambda: pipes[0].closed)
                    # the cut dropped what the client had not taken: its error event alone is left
                    assert _held(pipes[0]) < 64 * 1024
                response = await http.post(
                    proxy.url,
                    json=modern_call("quick", number, {"text": f"q{number}"}),
                    headers=modern_headers("quick"),
                )
                assert response.status_code == 200, response.text
                assert response.json()["result"]["content"][0]["text"] == f"q{number}"
            raw = await slow.read_until(b"\r\n0\r\n\r\n", 1)
            # the child is told once, in the id it saw
            await until(lambda: "cancelled" in record.read_text())
            lines = record.read_text().splitlines()
    pipe = pipes[0]
    assert isinstance(pipe, MeteredPipe)
    # bounded: the mark, plus the one event that crossed it and the error
    assert pipe.peak < listen_stateless.CUT_AT + 64 * 1024
    events = [line[6:] for line in dechunk(raw).decode().split("\n") if line.startswith("data: ")]
    last = json.loads(events[-1])
    assert last["id"] == 7
    assert last["error"]["code"] == -32000
    assert "too slowly" in last["error"]["message"]
    assert all(json.loads(e)["method"] == "notifications/progress" for e in events[:-1])
    assert not proxy.app.stateless.pending  # the cut request is forgotten
    [flood] = [line.split(" ", 1)[1] for line in lines if line.startswith("flood ")]
    assert [line for line in lines if line.startswith("cancelled ")] == [f"cancelled {flood}"]
    assert record.read_text().splitlines() == lines  # and only once, to the end
