"""`mcpframe proxy --` under load and faults, with each pump (`--pump thread|loop`): a client that stops
reading, 20,000 pipelined calls to a real server's `def` tool, the upstream killed mid-call, the client's
EOF mid-call."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from tests._process import stop_child

from .conftest import PEER, PROXY, RawClient, child_env

pumps = pytest.mark.parametrize("pump", ["thread", "loop"])

DEF_TOOL_SERVER = """
from mcpframe.server import Server

server = Server("def-tool", version="1.0.0")


@server.tool
def add(a: int, b: int) -> int:
    "a + b, in the server's worker threads."
    return a + b


server.run()
"""
PIPELINED = 20_000
STALL_FRAMES = 2048  # 16 KiB each: 32 MiB offered to a proxy whose client reads nothing
STALL_PAD = 16384


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.fixture
def proxy_of() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Proxies started by a test (`_start`), stopped at its end whatever happened."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        stop_child(proc)


def _start(started: list[subprocess.Popen[bytes]], pump: str, command: list[str]) -> subprocess.Popen[bytes]:
    pipe = subprocess.PIPE
    argv = [*PROXY, "--pump", pump, "--", *command]
    proc = subprocess.Popen(argv, stdin=pipe, stdout=pipe, env=child_env(), bufsize=0)
    started.append(proc)
    return proc


def _handshake(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    assert proc.stdout is not None
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    proc.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode()
    )
    proc.stdin.write(b"\n")
    assert json.loads(proc.stdout.readline())["id"] == 0
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the proxy's RSS from /proc")
@pumps
def test_a_client_that_stops_reading_stalls_the_upstream_not_the_proxys_memory(
    pump: str, proxy_of: list[subprocess.Popen[bytes]]
) -> None:
    proc = _start(proxy_of, pump, PEER)
    assert proc.stdin is not None
    assert proc.stdout is not None
    _handshake(proc)
    before = _rss_kib(proc.pid)
    wfd = proc.stdin.fileno()
    os.set_blocking(wfd, False)
    poller = select.poll()
    poller.register(wfd, select.POLLOUT)
    pad = b"x" * STALL_PAD
    sent, accepted, pending = 0, 0, b""
    while sent < STALL_FRAMES or pending:
        if not pending:
            pending = b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"pad":"%s"}}\n' % (sent, pad)
            sent += 1
        try:
            written = os.write(wfd, pending)
        except BlockingIOError:
            written = 0
        accepted += written
        pending = pending[written:]
        if not written and not poller.poll(1000):  # nothing taken for 1 s: the chain is stalled
            break
    grown = _rss_kib(proc.pid) - before
    # Everything in flight fits in the pipes and one read chunk per direction; 32 MiB were offered.
    assert sent < STALL_FRAMES
    assert accepted < 8 << 20
    assert grown < 24 << 10, f"the proxy's RSS grew by {grown} KiB while its client read nothing"

    def finish() -> None:  # the rest of the frame cut short, then EOF (while the answers are read)
        os.set_blocking(wfd, True)
        if pending:
            os.write(wfd, pending)
        proc.stdin.close()  # type: ignore[union-attr]

    writer = threading.Thread(target=finish)
    writer.start()
    ids = [json.loads(proc.stdout.readline()) for _ in range(sent)]
    writer.join()
    assert sorted(answer["id"] for answer in ids) == list(range(sent))
    assert all(answer["result"]["params"]["pad"] == pad.decode() for answer in ids)
    assert proc.wait(timeout=20) == 0


@pumps
def test_twenty_thousand_pipelined_calls_to_a_def_tool(
    pump: str, proxy_of: list[subprocess.Popen[bytes]]
) -> None:
    proc = _start(proxy_of, pump, [sys.executable, "-c", DEF_TOOL_SERVER])
    assert proc.stdin is not None
    assert proc.stdout is not None
    _handshake(proc)
    frames = b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"add","arguments":{"a":%d,"b":1}}}\n'
        % (i, i)
        for i in range(1, PIPELINED + 1)
    )

    def write_all() -> None:
        proc.stdin.write(frames)  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]

    writer = threading.Thread(target=write_all)  # all in flight at once: the answers are read meanwhile
    writer.start()
    seen = set()
    for _ in range(PIPELINED):
        answer = json.loads(proc.stdout.readline())
        assert answer["result"]["content"] == [{"type": "text", "text": str(answer["id"] + 1)}], answer
        seen.add(answer["id"])
    writer.join()
    assert seen == set(range(1, PIPELINED + 1))
    assert proc.wait(timeout=30) == 0


@pytest.mark.anyio
@pumps
async def test_the_upstream_killed_mid_call_fails_it_then_restarts(pump: str) -> None:
    client = await RawClient.start("--pump", pump)
    await client.handshake()
    pid = (await client.call(1, "pid"))["result"]["pid"]
    await client.send({"jsonrpc": "2.0", "id": 2, "method": "slow"})
    assert (await client.call(3, "echo"))["id"] == 3  # the peer has read the slow call: it is in flight
    os.kill(pid, signal.SIGKILL)
    failed = await client.recv()
    assert failed["id"] == 2
    assert failed["error"]["code"] == -32000
    assert f"status {128 + signal.SIGKILL}" in failed["error"]["message"]
    answer = await client.call(4, "echo", {"after": "restart"})
    assert answer["result"] == {"params": {"after": "restart"}, "initializations": 1}
    assert (await client.call(5, "pid"))["result"]["pid"] != pid
    assert await client.aclose() == 0


@pytest.mark.anyio
@pumps
async def test_the_clients_eof_mid_call_ends_the_upstream_and_answers_what_was_in_flight(pump: str) -> None:
    client = await RawClient.start("--pump", pump)
    await client.handshake()
    await client.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
    assert (await client.call(2, "echo"))["id"] == 2  # the slow call reached the peer
    assert client.process.stdin is not None
    await client.process.stdin.aclose()  # EOF: the peer's stdin closes too, and it exits unanswered
    failed = await client.recv()
    assert failed["id"] == 1
    assert "exited with status 0" in failed["error"]["message"]
    with anyio.fail_after(20):
        assert await client.process.wait() == 0


def test_thread_asked_for_on_a_regular_file_falls_back_to_the_loop(
    tmp_path: Path, proxy_of: list[subprocess.Popen[bytes]]
) -> None:
    """stdin a regular file (not a pipe): `--pump thread` cannot drive it, the loop pump serves it."""
    requests = tmp_path / "requests.ndjson"
    params = {"protocolVersion": "2025-11-25", "capabilities": {}}
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": i, "method": "echo", "params": {"i": i}} for i in range(1, 4)),
    ]
    requests.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    with requests.open("rb") as stdin:
        argv = [*PROXY, "--pump", "thread", "--", *PEER]
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, env=child_env())
        proxy_of.append(proc)
        out, _ = proc.communicate(timeout=20)
    answers = [json.loads(line) for line in out.splitlines()]
    assert [answer["id"] for answer in answers] == [0, 1, 2, 3]
    assert [answer["result"]["params"] for answer in answers[1:]] == [{"i": 1}, {"i": 2}, {"i": 3}]
    assert proc.returncode == 0
