"""The stateless bridge with a client over the mark (the review of s28's leftovers), pinned mostly on the
bridge itself, plus a log flood end to end and the meter on a real socket (the cut of a client that stops
reading, end to end: test_listen_stateless_slow.py):

- what the child wrote for one request reaches its client in that order: a held progress notification goes
  out before a later log line or answer for the same request, and held tokens in the order first held;
- held progress is sent, not dropped, before the answer or before the -32000 of a child that ended, and
  nothing stays held after;
- log lines are never held back, so past `MAX_UNREAD` waiting a client is cut, "too slow to read" (its
  request cancelled upstream once), while one that keeps up gets every line;
- a client over the mark is cut only when its meter shows no reading for `STALL_AFTER` (the bytes taken from
  its pipe, or those unacknowledged on its socket: SIOCOUTQ on Linux); the clock and the meter are
  injected, nothing here waits for time to pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.streamable_http._live_support import slow_client, until

from mcpframe import core
from mcpframe.http.pipe import MeteredPipe, Pipe
from mcpframe.http.streams import Stream
from mcpframe.proxy import listen_stateless
from mcpframe.proxy.listen_bridge import Route
from mcpframe.proxy.listen_stateless import CUT_AT, MAX_UNREAD, ClientMeter, StatelessBridge

from ._listen_support import attached_pipes, dechunk, in_process_proxy, modern_call, modern_headers

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _item(raw: bytes) -> Any:
    [item] = core.decode(raw, lazy=True)
    return item


def _progress(token: int, number: int) -> Any:
    """A progress notification as the shared child writes it: its token is the request's upstream id."""
    params = {"progressToken": token, "progress": number}
    return _item(core.encode_notification("notifications/progress", params))


def _log(text: str) -> Any:
    return _item(core.encode_notification("notifications/message", {"level": "info", "data": text}))


def _answer(upstream: int) -> Any:
    return _item(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % upstream)


class _Bridged:
    """One stateless POST (client id 7, upstream id 1) waiting on a bridge, its SSE answer attached.

    Its progress tokens are seeded as `StatelessBridge.handle` does: the child knows each by an upstream
    id (the first: 1, the request's own), the bridge maps that back to the client's token as it wrote it,
    so the client's frames show its own tokens only if the bridge spliced them back."""

    def __init__(self, tokens: list[str]) -> None:
        self.spawned: list[tuple[Any, ...]] = []
        self.bridge = StatelessBridge(None, max_frame=1 << 22, spawn=self._spawn)  # type: ignore[arg-type]
        self.upstream = {token: number for number, token in enumerate(tokens, 1)}
        self.route = route = Route(Stream(None, None), [1], list(self.upstream.values()))
        self.bridge.pending[1] = (route, 7)
        for token, number in self.upstream.items():
            self.bridge.tokens[number] = (route, json.dumps(token).encode())
        route.on_close.append(lambda: self.bridge._forget(route, 1))
        self.pipe: MeteredPipe

    def progress(self, token: str, number: int) -> Any:
        """The child's progress notification for the client's `token`."""
        return _progress(self.upstream[token], number)

    def _spawn(self, *args: Any) -> None:
        self.spawned.append(args)

    async def attach(self) -> None:
        pipe = await self.route.stream.attach(retry_ms=None)
        assert isinstance(pipe, MeteredPipe)
        self.pipe = pipe

    def fall_behind(self) -> None:
        """What the client has not taken passes the mark."""
        self.pipe.put(b"x" * (CUT_AT + 1))

    def catch_up(self) -> None:
        while self.pipe.get_nowait():
            pass

    def sent(self) -> list[Any]:
        """The frames the client got since it caught up, in order (decoded)."""
        frames = []
        while chunk := self.pipe.get_nowait():
            for line in chunk.split(b"\n"):
                if line.startswith(b"data: "):
                    frames.append(json.loads(line[6:]))
        return frames


def _shown(frame: dict[str, Any]) -> Any:
    if "id" in frame:
        return ("answer", frame["id"])
    params = frame["params"]
    if frame["method"] == "notifications/progress":
        return (params["progressToken"], params["progress"])
    return ("log", params["data"])


async def test_a_log_line_after_held_progress_comes_after_it() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    await client.bridge._route(client.progress("tok", 1))  # held: the client is over the mark
    await client.bridge._route(_log("after 1"))
    client.pipe.get_nowait()  # the client takes the bytes that put it over the mark
    await client.bridge._route(_answer(1))
    assert [_shown(f) for f in client.sent()] == [("tok", 1), ("log", "after 1"), ("answer", 7)]


async def test_what_the_client_got_while_behind_keeps_the_childs_order() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    written = [
        client.progress("tok", 1),
        _log("after 1"),
        client.progress("tok", 2),
        client.progress("tok", 3),
    ]
    for item in (*written, _log("after 3")):
        await client.bridge._route(item)
    await client.bridge._route(_answer(1))
    client.pipe.get_nowait()  # the bytes that put it over the mark
    assert [_shown(f) for f in client.sent()] == [
        ("tok", 1),
        ("log", "after 1"),
        ("tok", 3),  # 2 replaced while held
        ("log", "after 3"),
        ("answer", 7),
    ]


async def test_held_tokens_go_out_in_the_order_first_held() -> None:
    client = _Bridged(["a", "b"])
    await client.attach()
    client.fall_behind()
    for item in (client.progress("a", 1), client.progress("b", 1), client.progress("a", 2)):
        await client.bridge._route(item)
    client.catch_up()
    await client.bridge._route(_answer(1))
    assert [_shown(f) for f in client.sent()] == [("a", 2), ("b", 1), ("answer", 7)]


class _EndingChild:
    """A shared child that writes `frames` and ends (status 1)."""

    returncode = None

    def __init__(self, frames: list[Any]) -> None:
        self._frames = frames

    async def frames(self, *, max_frame: int) -> AsyncIterator[Any]:
        for frame in self._frames:
            yield frame

    async def close(self) -> int:
        self.returncode = 1
        return 1


async def test_held_progress_goes_out_before_the_answer() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    await client.bridge._route(client.progress("tok", 1))
    await client.bridge._route(client.progress("tok", 2))
    client.pipe.get_nowait()
    await client.bridge._route(_answer(1))
    assert [_shown(f) for f in client.sent()] == [("tok", 2), ("answer", 7)]
    assert not client.bridge.behind
    assert client.route.closed


async def test_held_progress_goes_out_before_the_error_of_a_child_that_ended() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    child = _EndingChild([client.progress("tok", 1), client.progress("tok", 2)])
    client.bridge.child = child  # type: ignore[assignment]
    await client.bridge._read(child)  # type: ignore[arg-type]
    client.pipe.get_nowait()
    sent = client.sent()
    assert [_shown(f) for f in sent] == [("tok", 2), ("answer", 7)]
    assert sent[-1]["error"]["code"] == -32000
    assert "exited (status 1)" in sent[-1]["error"]["message"]
    assert client.route.closed
    assert not client.bridge.behind
    assert not client.bridge.pending
    assert client.bridge.child is None


def _big_log(number: int) -> Any:
    return _log(f"{number:06d}" + "x" * (256 * 1024))


async def test_a_client_past_the_cap_is_cut_too_slow_to_read_and_cancelled_once() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    number = 0
    while not client.route.closed:
        assert number < MAX_UNREAD // (256 * 1024) + 2  # cut at the cap, not later
        await client.bridge._route(_big_log(number))
        number += 1
    assert client.pipe.peak <= MAX_UNREAD + 256 * 1024 + 1024  # the cap, plus the one line that crossed it
    await client.bridge._route(_big_log(number))  # nothing more is kept for it
    [frame] = client.sent()  # what it had not taken is dropped: its error alone is left
    assert frame["id"] == 7
    assert frame["error"]["code"] == -32000
    assert "too slow to read" in frame["error"]["message"]
    assert not client.bridge.pending
    assert not client.bridge.behind
    assert [args[1:] for args in client.spawned] == [(1, "the HTTP client read too slowly")]


async def test_a_client_that_keeps_up_gets_every_log_line() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    got: list[Any] = []
    for number in range(3 * MAX_UNREAD // (256 * 1024)):  # three caps' worth, read as it comes
        await client.bridge._route(_big_log(number))
        if number % 8 == 7:  # reads in bursts: over the mark between them
            assert client.bridge.behind
            got += client.sent()
    await client.bridge._route(_answer(1))
    got += client.sent()
    assert [_shown(f)[1][:6] for f in got[:-1]] == [f"{n:06d}" for n in range(3 * MAX_UNREAD // (256 * 1024))]
    assert got[-1] == {"jsonrpc": "2.0", "id": 7, "result": {}}


_LOGGING_CHILD = r"""
import json, sys, threading

lock = threading.Lock()
cancelled = set()
record = open(sys.argv[1], "a", buffering=1)

def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

def logs(rid):
    number = 0
    while rid not in cancelled:
        params = {"level": "info", "data": "%06d" % number + "x" * 65536}
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
        number += 1
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [], "logged": number}})

for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "notifications/cancelled":
        cancelled.add(message["params"]["requestId"])
        record.write("cancelled %s\n" % json.dumps(message["params"]["requestId"]))
    elif message.get("method") == "tools/call":
        record.write("logs %s\n" % json.dumps(message["id"]))
        threading.Thread(target=logs, args=(message["id"],), daemon=True).start()
"""


async def test_a_client_flooded_with_log_lines_is_cut_at_the_cap_not_grown_without_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's log_flood_peak.py: the child writes log lines (never held back) faster than its client
    reads. Only the cap may cut here (the stall rule is put out of reach), so the pipe never holds more."""
    monkeypatch.setattr(listen_stateless, "STALL_AFTER", 1e9)
    pipes: list[Pipe] = attached_pipes(monkeypatch)
    meters: list[ClientMeter] = []

    class _Recorded(ClientMeter):
        def __init__(self, stream: Stream, transport: Any = None) -> None:
            super().__init__(stream, transport)
            meters.append(self)

    monkeypatch.setattr(listen_stateless, "ClientMeter", _Recorded)
    child = tmp_path / "child.py"
    child.write_text(_LOGGING_CHILD)
    record = tmp_path / "record.txt"
    async with (
        in_process_proxy([sys.executable, str(child), str(record)], pool_size=1) as proxy,
        slow_client(proxy.url, modern_headers("logs")) as slow,
    ):
        slow.post(modern_call("logs", 7, {}, progressToken="tok"))
        with anyio.fail_after(30):
            await until(lambda: bool(pipes) and pipes[0].closed)
            # the lean server named the connection: its unacknowledged bytes are read (on Linux)
            assert meters[0].transport is not None
            if sys.platform == "linux":
                assert meters[0].unsent() > 0
            raw = await slow.read_until(b"\r\n0\r\n\r\n", 1)
            await until(lambda: "cancelled" in record.read_text())
        assert not proxy.app.stateless.pending
    pipe = pipes[0]
    assert isinstance(pipe, MeteredPipe)
    assert pipe.peak <= MAX_UNREAD + 64 * 1024 + 1024  # the cap, plus the one line that crossed it
    events = [json.loads(line[6:]) for line in dechunk(raw).decode().split("\n") if line.startswith("data: ")]
    last = events[-1]
    assert last["id"] == 7
    assert last["error"]["code"] == -32000
    assert "too slow to read" in last["error"]["message"]
    numbers = [int(e["params"]["data"][:6]) for e in events[:-1]]
    assert numbers == list(range(len(numbers)))  # what it got came in order, none skipped
    lines = record.read_text().splitlines()
    [logs] = [line.split(" ", 1)[1] for line in lines if line.startswith("logs ")]
    assert [line for line in lines if line.startswith("cancelled ")] == [f"cancelled {logs}"]


class _FakeMeter:
    """A client's meter whose readings the test sets."""

    def __init__(self) -> None:
        self.taken = 0
        self.unsent = 0

    def reading(self) -> tuple[int, int]:
        return self.taken, self.unsent


async def test_a_client_whose_socket_drains_is_not_cut_however_long_it_takes_nothing_from_the_pipe() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    meter = _FakeMeter()
    client.bridge.meters[client.route] = meter  # type: ignore[assignment]
    now = [0.0]
    client.bridge.clock = lambda: now[0]
    meter.unsent = 4 << 20
    for number in range(10):  # 300 s: the socket's unacknowledged bytes fall, the pipe is not taken from
        await client.bridge._route(client.progress("tok", number))
        now[0] += listen_stateless.STALL_AFTER
        meter.unsent -= 64 * 1024
    assert not client.route.closed
    meter.taken += CUT_AT  # its response takes a batch, and writes it: unacknowledged bytes rise
    meter.unsent += CUT_AT
    await client.bridge._route(client.progress("tok", 10))
    now[0] += listen_stateless.STALL_AFTER  # still, but not longer than that
    await client.bridge._route(client.progress("tok", 11))
    assert not client.route.closed
    now[0] += 0.001  # longer than that: it stopped reading
    await client.bridge._route(client.progress("tok", 12))
    assert client.route.closed
    [frame] = client.sent()
    assert "too slowly" in frame["error"]["message"]
    assert [args[1:] for args in client.spawned] == [(1, "the HTTP client read too slowly")]


async def test_unacknowledged_bytes_that_rise_are_no_reading() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    meter = _FakeMeter()
    client.bridge.meters[client.route] = meter  # type: ignore[assignment]
    now = [0.0]
    client.bridge.clock = lambda: now[0]
    for number in range(3):  # keepalives, the error of a cut: written, never acknowledged
        await client.bridge._route(client.progress("tok", number))
        meter.unsent += 16
        now[0] += listen_stateless.STALL_AFTER * 0.6
    assert client.route.closed


async def test_the_meter_reads_the_sockets_unacknowledged_bytes() -> None:
    """On Linux, through mcpframe's lean server's transport; elsewhere it reads 0 (the pipe rule)."""
    accepted: list[asyncio.Transport] = []

    class _Server(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            accepted.append(transport)

    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    peer = socket.create_connection(("127.0.0.1", port))
    peer.setblocking(False)
    try:
        with anyio.fail_after(10):
            await until(lambda: bool(accepted))
            transport = accepted[0]
            meter = ClientMeter(Stream(None, None), transport)
            assert meter.reading() == (0, 0)
            transport.write(b"x" * (16 << 20))  # far more than the peer's and the socket's buffers take
            if sys.platform != "linux":
                assert meter.unsent() == 0
                return
            # nothing was read: all but what the peer's receive buffer took (acknowledged) is in the
            # socket's send queue or the transport's buffer
            assert 8 << 20 < meter.unsent() <= 16 << 20
            while (before := meter.unsent()) > (8 << 20):
                with contextlib.suppress(BlockingIOError):
                    while peer.recv(1 << 20):  # the peer reads: what is unacknowledged falls
                        pass
                await until(lambda: meter.unsent() < before)
    finally:
        peer.close()
        transport.close()
        server.close()
        await server.wait_closed()
    assert ClientMeter(Stream(None, None), transport).unsent() == 0  # a closed connection: unknown
