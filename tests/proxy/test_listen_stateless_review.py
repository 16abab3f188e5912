"""The review of the stateless bridge's slow-client work (s29), each finding pinned:

- two clients naming the same `progressToken` (SDKs commonly use the request id) each get their own progress
  alone, in order, with their token back exactly as they sent it (an int stays an int, a string a string);
- progress held back for a client over the mark goes out once it caught up, at the next frame the child
  writes for anyone (not only at the next one for its own request);
- one big log line does not cut a client that is just over the mark: only bytes already waiting past
  `MAX_UNREAD` do;
- a real client that reads slowly, its socket draining, is not cut however long past `STALL_AFTER` it takes
  (the clock is injected and the reader throttled by hand: nothing waits for time to pass).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.streamable_http._live_support import SlowClient, slow_client, until

from mcpframe.http.streams import Stream
from mcpframe.proxy import listen_stateless
from mcpframe.proxy.listen_bridge import Route
from mcpframe.proxy.listen_stateless import CUT_AT, MAX_UNREAD

from ._listen_support import dechunk, in_process_proxy, modern_call, modern_headers
from .test_listen_stateless_leftovers import _answer, _Bridged, _item, _log, _shown

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# answers nothing until two calls came, then writes progress for both, interleaved, with the token each named
_PAIRED_CHILD = r"""
import json, sys

calls = []
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") != "tools/call":
        continue
    calls.append(message)
    if len(calls) < 2:
        continue
    for number in range(4):
        for call in calls:
            who = call["params"]["arguments"]["who"]
            token = call["params"]["_meta"]["progressToken"]
            params = {"progressToken": token, "progress": number, "message": who}
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
            sys.stdout.write(json.dumps(note) + "\n")
    for call in calls:
        token = call["params"]["_meta"]["progressToken"]
        result = {"content": [], "who": call["params"]["arguments"]["who"], "token": token}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": result}) + "\n")
    sys.stdout.flush()
    calls = []
"""


async def _call(http: httpx.AsyncClient, url: str, who: str, token: Any) -> list[dict[str, Any]]:
    """What one client's SSE answer brought, decoded, in order."""
    got = []
    body = modern_call("w", 1, {"who": who}, progressToken=token)
    async with http.stream("POST", url, json=body, headers=modern_headers("w")) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                got.append(json.loads(line[6:]))
    return got


@pytest.mark.parametrize(
    ("token_a", "token_b"),
    [(1, 1), ("1", "1"), (1, "1"), ("tok", "tok")],
    ids=["int", "str", "int-and-str", "name"],
)
async def test_two_clients_with_the_same_progress_token_each_get_their_own(
    tmp_path: Path, token_a: Any, token_b: Any
) -> None:
    child = tmp_path / "child.py"
    child.write_text(_PAIRED_CHILD)
    got: dict[str, list[dict[str, Any]]] = {}
    async with (
        in_process_proxy([sys.executable, str(child)], pool_size=1) as proxy,
        httpx.AsyncClient(timeout=20) as http,
    ):

        async def call(who: str, token: Any) -> None:
            got[who] = await _call(http, proxy.url, who, token)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(call, "A", token_a)
                group.start_soon(call, "B", token_b)
    for who, token in (("A", token_a), ("B", token_b)):
        *progress, answer = got[who]
        assert [(p["params"]["message"], p["params"]["progress"]) for p in progress] == [
            (who, n) for n in range(4)
        ]
        for frame in progress:
            sent = frame["params"]["progressToken"]
            assert sent == token
            assert type(sent) is type(token)
        assert answer["id"] == 1
        assert answer["result"]["who"] == who
        # the child saw a token of the proxy's, not the client's: that is what kept the two apart
        assert answer["result"]["token"] != got["B" if who == "A" else "A"][-1]["result"]["token"]


async def test_a_token_written_oddly_comes_back_byte_for_byte() -> None:
    """The client's token goes back as it wrote it (escapes and all), not as a re-encoding of it."""
    client = _Bridged([])
    route = client.route
    client.bridge.tokens[1] = (route, b'"t\\u00e9"')
    route.tokens.append(1)
    await client.attach()
    raw = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":5}}'
    await client.bridge._route(_item(raw))
    chunk = client.pipe.get_nowait()
    assert chunk is not None
    assert b'"params":{"progressToken":"t\\u00e9","progress":5}}' in chunk


async def test_true_is_not_the_progress_token_1() -> None:
    client = _Bridged([])
    client.bridge.tokens[1] = (client.route, b"1")
    client.route.tokens.append(1)
    await client.attach()
    raw = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":true,"progress":5}}'
    await client.bridge._route(_item(raw))
    assert client.pipe.get_nowait() is None


async def _other_request(client: _Bridged) -> Route:
    """Another client's POST (upstream id 2), newer: the child's log lines now go to it."""
    other = Route(Stream(None, None), [2], [])
    client.bridge.pending[2] = (other, 8)
    await other.stream.attach(retry_ms=None)
    return other


async def test_held_progress_goes_out_with_the_next_frame_for_anyone_once_its_client_caught_up() -> None:
    """The review's held_stuck.py: it waited for the next frame of its own request."""
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    await client.bridge._route(client.progress("tok", 1))  # held: the client is over the mark
    await _other_request(client)
    await client.bridge._route(_log("for the other 0"))
    assert client.bridge.behind  # still over the mark: still held
    client.catch_up()
    assert client.sent() == []
    await client.bridge._route(_log("for the other 1"))
    assert [_shown(f) for f in client.sent()] == [("tok", 1)]
    assert not client.bridge.behind
    await client.bridge._route(_answer(1))  # nothing is sent twice
    assert [_shown(f) for f in client.sent()] == [("answer", 7)]


@pytest.mark.parametrize("behind", [CUT_AT + 1, MAX_UNREAD - 1, MAX_UNREAD])
async def test_one_big_log_line_goes_out_to_a_client_not_yet_past_the_cap(behind: int) -> None:
    """The review's big_frame.py: a 7.5 MiB line cut a client just over the mark, whatever its speed."""
    client = _Bridged(["tok"])
    await client.attach()
    client.pipe.put(b"x" * behind)
    await client.bridge._route(_log("y" * (15 << 19)))
    assert not client.route.closed
    assert client.spawned == []
    client.pipe.get_nowait()  # the bytes it was behind by
    [line] = client.sent()
    assert len(line["params"]["data"]) == 15 << 19


async def test_a_client_with_more_than_the_cap_waiting_is_cut_by_the_next_line_however_small() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.pipe.put(b"x" * (MAX_UNREAD + 1))
    await client.bridge._route(_log("y"))
    assert client.route.closed
    [frame] = client.sent()  # what it had not taken is dropped: its error alone is left
    assert "too slow to read" in frame["error"]["message"]
    assert [args[1:] for args in client.spawned] == [(1, "the HTTP client read too slowly")]


# `flood` writes big progress notifications for its token until a `stop` call comes, then answers
_FLOOD_CHILD = r"""
import json, sys, threading

lock = threading.Lock()
stop = threading.Event()

def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

def flood(rid, token):
    number = 0
    while not stop.is_set():
        params = {"progressToken": token, "progress": number, "message": "x" * 16384}
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        number += 1
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [], "flooded": number}})

for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") != "tools/call":
        continue
    if message["params"]["name"] == "flood":
        token = message["params"]["_meta"]["progressToken"]
        threading.Thread(target=flood, args=(message["id"], token), daemon=True).start()
    else:
        stop.set()
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}})
"""


async def _take(slow: SlowClient, size: int) -> None:
    """The slow client reads `size` bytes of its answer, no more (what it reads is kept in `slow.text`)."""
    taken = 0
    while taken < size:
        chunk = await slow.reader.read(size - taken)
        assert chunk
        slow.text += chunk
        taken += len(chunk)


async def test_a_slow_reader_whose_socket_drains_is_not_cut_however_long_past_stall_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: a client over the mark that reads a little at a time, never taking nothing for
    `STALL_AFTER`, is not cut over many times that long, and gets its answer. The bridge's clock is the
    test's: it moves on only once the bridge saw the client read at the time it shows."""
    monkeypatch.setattr(listen_stateless, "STALL_AFTER", 1.0)
    now = [0.0]
    child = tmp_path / "child.py"
    child.write_text(_FLOOD_CHILD)
    async with (
        in_process_proxy([sys.executable, str(child)], pool_size=1) as proxy,
        slow_client(proxy.url, modern_headers("flood")) as slow,
        httpx.AsyncClient(timeout=20) as http,
    ):
        bridge = proxy.app.stateless
        bridge.clock = lambda: now[0]

        def seen_reading() -> bool:
            """The bridge saw the client read at the clock's time (or it is no longer over the mark)."""
            return all(behind.since == now[0] for behind in bridge.behind.values())

        slow.post(modern_call("flood", 7, {}, progressToken=7))
        with anyio.fail_after(30):
            await until(lambda: bool(bridge.behind))  # it read nothing yet: over the mark
            for _ in range(12):  # 9 x STALL_AFTER in all
                now[0] += 0.75
                await _take(slow, 256 * 1024)
                await until(seen_reading)
                assert bridge.pending  # not cut
            response = await http.post(
                proxy.url, json=modern_call("stop", 1, {}), headers=modern_headers("stop")
            )
            assert response.status_code == 200, response.text
            raw = await slow.read_until(b"\r\n0\r\n\r\n", 1)
    events = [json.loads(line[6:]) for line in dechunk(raw).decode().split("\n") if line.startswith("data: ")]
    *progress, answer = events
    assert answer["id"] == 7
    assert "flooded" in answer["result"]
    numbers = [event["params"]["progress"] for event in progress]
    assert numbers == sorted(set(numbers))  # newest values only, in order
    assert all(event["params"]["progressToken"] == 7 for event in progress)
