"""`mcpframe tap`: bytes pass unchanged, one JSONL record per frame, the exit table, status and signals."""

from __future__ import annotations

import base64
import collections
import io
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from mcpframe.cli import tap, tap_record
from mcpframe.cli.tap_record import pretty_line
from mcpframe.client import Client

from .conftest import SERVE, child_env

pytestmark = pytest.mark.anyio

EVERYTHING = str(Path(__file__).resolve().parents[2] / "examples" / "everything.py")
TAP = [sys.executable, "-m", "mcpframe", "tap"]
SERVER = [*SERVE, EVERYTHING]


def _request(rid: int | str, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
BAD = b'{"jsonrpc": "2.0", "id": 9, "method": broken\n'
# (line, answered?): each answered line is written only after the previous answer arrived (lock step),
# so both runs see the same order and the replies can be compared byte for byte
SCRIPT = [
    (_request(1, "initialize", INIT), True),
    (b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n', False),
    (_request(2, "tools/list"), True),
    (BAD, True),  # the server answers a parse error
    (_request("three", "ping"), True),
    (_request(4, "tools/call", {"name": "test_simple_text", "arguments": {}}), True),
]


async def _read_line(child: Process, buffered: bytearray) -> bytes:
    assert child.stdout is not None
    while b"\n" not in buffered:
        buffered += await child.stdout.receive()
    line, _, rest = bytes(buffered).partition(b"\n")
    buffered[:] = rest
    return line + b"\n"


async def _converse(command: list[str]) -> tuple[bytes, int, str]:
    """Run SCRIPT against ``command``: everything it wrote on stdout, its exit status and stderr."""
    replies = bytearray()
    buffered = bytearray()
    async with await anyio.open_process(command, env=child_env()) as child:
        assert child.stdin is not None
        assert child.stderr is not None
        with anyio.fail_after(60):
            for line, answered in SCRIPT:
                await child.stdin.send(line)
                if answered:
                    replies += await _read_line(child, buffered)
            await child.stdin.aclose()
            async for chunk in child.stdout:  # type: ignore[union-attr]
                replies += chunk
            status = await child.wait()
            stderr = b"".join([chunk async for chunk in child.stderr]).decode()
    return bytes(replies), status, stderr


async def test_bytes_unchanged_and_one_record_per_frame(tmp_path: Path) -> None:
    log = tmp_path / "tap.jsonl"
    direct, direct_status, _ = await _converse(SERVER)
    tapped, status, stderr = await _converse([*TAP, "--log", str(log), "--", *SERVER])
    assert tapped == direct
    assert (status, direct_status) == (0, 0)

    records = [json.loads(line) for line in log.read_text().splitlines()]
    sent = [r for r in records if r["dir"] == "c2s"]
    received = [r for r in records if r["dir"] == "s2c"]
    assert len(sent) == len(SCRIPT)
    assert [r["size"] for r in sent] == [len(line) - 1 for line, _ in SCRIPT]
    assert [r.get("id") for r in sent] == [1, None, 2, None, "three", 4]
    assert [r["kind"] for r in sent] == [
        "request",
        "notification",
        "request",
        "invalid",
        "request",
        "request",
    ]
    assert len(received) == len(tapped.splitlines())
    assert [r.get("id") for r in received] == [1, 2, 9, "three", 4]  # BAD's id still reads

    bad = sent[3]  # logged whole, and it reached the server as it came (the server's parse error)
    assert bad["raw"] == BAD[:-1].decode()
    assert bad["raw_b64"]
    assert bad["error"]["code"] == -32700
    assert received[2]["kind"] == "error"

    answered = {r["id"]: r for r in received if "latency_ms" in r}
    assert set(answered) == {1, 2, "three", 4}
    assert answered[4]["method"] == "tools/call"
    assert answered[4]["latency_ms"] >= 0
    by_id = {r["id"]: r["t"] for r in sent if "id" in r}
    for rid, answer in answered.items():  # the latency is the gap between the two records' reads
        assert answer["latency_ms"] == pytest.approx((answer["t"] - by_id[rid]) * 1000.0, abs=0.001)
        assert answer["t"] >= by_id[rid]

    table = stderr[stderr.index("method") :].splitlines()
    rows = {row.split()[0]: row.split() for row in table[1:]}
    assert rows["tools/call"][1] == "1"
    assert rows["tools/call"][2] != "-"
    assert rows["notifications/initialized"][1:] == ["1", "-", "-"]


# Frames a transparent observer must pass on untouched: broken JSON, invalid UTF-8, a NUL, a CRLF line,
# a blank line, and an unterminated last frame.
ODD = [
    _request(1, "ping"),
    BAD,
    b'\xff\xfe{"a":1}\n',
    b'{"jsonrpc":"2.0","method":"n"}\r\n',
    b"\n",
    b"\x00\n",
    b'{"jsonrpc":"2.0","id":5,"method":"pi',
]
CAT = [sys.executable, "-c", "import os\nwhile b := os.read(0, 65536):\n    os.write(1, b)\n"]


async def test_bad_frames_pass_byte_identical_and_are_logged_whole(tmp_path: Path) -> None:
    log = tmp_path / "tap.jsonl"
    sent = b"".join(ODD)
    with anyio.fail_after(60):  # the child echoes its stdin: both directions carry the same bytes
        result = await anyio.run_process([*TAP, "--log", str(log), "--", *CAT], input=sent, env=child_env())
    assert result.returncode == 0
    assert result.stdout == sent
    records = [json.loads(line) for line in log.read_text().splitlines()]
    bad = [BAD.rstrip(b"\n"), b'\xff\xfe{"a":1}', b"\x00", ODD[-1]]
    for direction in ("c2s", "s2c"):
        mine = [r for r in records if r["dir"] == direction]
        assert [r["kind"] for r in mine] == [
            "request",
            "invalid",
            "invalid",
            "notification",
            "invalid",
            "invalid",
        ]
        invalid = [r for r in mine if r["kind"] == "invalid"]
        assert [base64.b64decode(r["raw_b64"]) for r in invalid] == bad
        assert invalid[1]["raw"] == '\ufffd\ufffd{"a":1}'
        assert all("truncated" not in r for r in invalid)


async def test_client_through_the_tap_pretty(tmp_path: Path) -> None:
    log = tmp_path / "tap.jsonl"
    command = [*TAP, "--pretty", "--log", str(log), "--", *SERVER]
    with (tmp_path / "stderr").open("w+b") as stderr:
        async with Client.stdio(
            command[0], command[1:], env=child_env(FORCE_COLOR="1"), stderr=stderr
        ) as client:
            tools = await client.list_tools()
            result = await client.call_tool("test_simple_text", {})
        stderr.seek(0)
        lines = stderr.read().decode().splitlines()
    assert any(tool["name"] == "test_simple_text" for tool in tools)
    assert result["content"]
    coloured = [line for line in lines if "tools/call" in line and line.startswith("\x1b[")]
    assert len(coloured) == 2  # the request and its answer, coloured (FORCE_COLOR)
    assert "-->" in coloured[0]
    assert "<--" in coloured[1]
    assert coloured[1].endswith("ms\x1b[0m")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [r for r in records if r.get("method") == "tools/call"]
    assert [r["dir"] for r in calls] == ["c2s", "s2c"]
    assert calls[1]["id"] == calls[0]["id"]
    assert "latency_ms" in calls[1]


async def test_pretty_line_without_colour() -> None:
    record = {"dir": "s2c", "kind": "result", "method": "ping", "id": 3, "size": 36, "latency_ms": 1.5}
    assert pretty_line(record, colour=False) == "<-- result ping id=3 36B 1.500ms"


async def test_exit_status_is_the_childs() -> None:
    command = [*TAP, "--", sys.executable, "-c", "import sys; sys.exit(7)"]
    with anyio.fail_after(60):
        result = await anyio.run_process(command, env=child_env(), check=False, stdin=None)
    assert result.returncode == 7
    assert b"method" in result.stderr  # the (empty) table


async def test_sigterm_is_forwarded_to_the_child() -> None:
    child_code = (
        "import signal, sys\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(9))\n"
        "print('ready', flush=True)\n"
        "signal.pause()\n"
    )
    command = [*TAP, "--", sys.executable, "-c", child_code]
    async with await anyio.open_process(command, env=child_env()) as tap:
        with anyio.fail_after(60):
            assert await _read_line(tap, bytearray()) == b"ready\n"  # forwarded, so the child is running
            tap.send_signal(signal.SIGTERM)
            assert await tap.wait() == 9


async def test_unknown_command_is_127() -> None:
    with anyio.fail_after(60):
        result = await anyio.run_process([*TAP, "--", "/nonexistent/server"], env=child_env(), check=False)
    assert result.returncode == 127
    assert b"cannot run '/nonexistent/server'" in result.stderr


class _StuckLog(io.StringIO):
    """A log file whose writes wait until released: a log that cannot keep up."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def write(self, text: str) -> int:
        assert self.release.wait(60)
        return super().write(text)


@pytest.mark.parametrize(
    ("bound", "limit", "frame"),
    [
        ("QUEUE_CHUNKS", 4, lambda i: _request(i, "ping")),
        # bad frames are logged whole: the bound in bytes is what holds a stuck log's backlog down
        ("QUEUE_BYTES", 10_000, lambda i: b'{"jsonrpc":"2.0","id":%d,"method":' % i + b"x" * 2_000 + b"\n"),
    ],
)
def test_slow_log_holds_forwarding_back_and_loses_nothing(
    monkeypatch: pytest.MonkeyPatch, bound: str, limit: int, frame: Callable[[int], bytes]
) -> None:
    """A burst bigger than the queue's bound meets a stuck log: the forwarding thread waits (it does
    not drop records, nor queue without bound); once the log moves, every record is written, in order."""
    monkeypatch.setattr(tap_record, bound, limit)
    log = _StuckLog()
    recorder = tap_record.Recorder(log, None, colour=False, warn=io.StringIO())
    waiting = threading.Event()
    wait_for_room = recorder._wait_for_room

    def noted_wait() -> None:
        waiting.set()
        wait_for_room()

    monkeypatch.setattr(recorder, "_wait_for_room", noted_wait)
    sent: list[int] = []

    def forward() -> None:  # what a forwarding thread does per chunk (here: one frame per chunk)
        for i in range(50):
            recorder.observe("c2s", frame(i))
            sent.append(i)

    forwarder = threading.Thread(target=forward)
    forwarder.start()
    assert waiting.wait(60)  # the forwarder is held back...
    held_at = len(sent)
    room = limit if bound == "QUEUE_CHUNKS" else limit // len(frame(0))
    assert held_at <= room + 1  # ...with at most the bound, and the chunk over it, taken
    log.release.set()
    forwarder.join(60)
    recorder.close()
    records = [json.loads(line) for line in log.getvalue().splitlines()]
    seen = [r["id"] if "id" in r else base64.b64decode(r["raw_b64"]) for r in records]
    assert seen == [i if bound == "QUEUE_CHUNKS" else frame(i)[:-1] for i in range(50)]  # all, in order
    assert recorder.frames == 50
    assert recorder._chunks == collections.deque()


def test_a_log_that_cannot_be_written_is_said_once_and_left() -> None:
    class FullDisk(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    warn = io.StringIO()
    recorder = tap_record.Recorder(FullDisk(), None, colour=False, warn=warn)
    for i in range(10):
        recorder.observe("c2s", _request(i, "ping"))
    recorder.close()
    assert warn.getvalue().count("cannot write the log any more") == 1
    assert recorder.stats["ping"].count == 10  # the table is still exact


def test_latency_is_the_time_between_the_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers are matched to their request by direction and id, even out of order or in one chunk,
    and the latency is the gap between the reads that brought them."""
    log = io.StringIO()
    recorder = tap_record.Recorder(log, None, colour=False, warn=io.StringIO())
    recorder.take("c2s", _request(1, "tools/call") + _request("b", "ping"), 100.0)
    recorder.take("s2c", _request(1, "roots/list"), 100.1)  # the server asks too, with the same id
    recorder.take("s2c", b'{"jsonrpc":"2.0","id":"b","result":{}}\n', 100.010)
    recorder.take("c2s", b'{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}\n', 100.2)
    recorder.take("s2c", b'{"jsonrpc":"2.0","id":1,"result":{}}\n', 100.250)
    recorder.take("s2c", b'{"jsonrpc":"2.0","id":7,"result":{}}\n', 100.3)  # asked by nobody
    recorder.close()
    answers = [json.loads(line) for line in log.getvalue().splitlines()][3:]
    assert [(a["dir"], a["id"], a.get("method"), a.get("latency_ms")) for a in answers] == [
        ("s2c", "b", "ping", 10.0),
        ("c2s", 1, "roots/list", 100.0),
        ("s2c", 1, "tools/call", 250.0),
        ("s2c", 7, None, None),
    ]
    p50 = recorder.stats["tools/call"].latency(0.5)
    assert p50 is not None
    assert 250.0 <= p50 <= 250.0 * 1.0101


def test_latency_histogram_is_within_one_percent_of_exact() -> None:
    stats = tap_record.MethodStats()
    values = [0.0005, *(0.001 * 1.37**k for k in range(40)), *(0.25 + i / 997 for i in range(997))]
    for value in values:
        stats.add_latency(value)
    ordered = sorted(values)
    for fraction in (0.5, 0.9, 0.99):
        exact = ordered[max(1, math.ceil(fraction * len(ordered))) - 1]
        estimate = stats.latency(fraction)
        assert estimate is not None
        assert exact <= estimate <= exact * 1.0101
    assert stats.latency(0.0001) == 0.001  # under a microsecond: reported as 1 µs
    assert len(stats.buckets) < len(values)
    assert tap_record.MethodStats().latency(0.5) is None


def test_method_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap_record, "MAX_METHODS", 3)
    recorder = tap_record.Recorder(None, None, colour=False, warn=io.StringIO())
    recorder.observe("c2s", b"".join(_request(i, f"m{i}") for i in range(10)))
    recorder.close()
    assert set(recorder.stats) == {"m0", "m1", "m2", tap_record.OTHER_METHODS}
    assert recorder.stats[tap_record.OTHER_METHODS].count == 7


async def test_bench_tap_smoke() -> None:
    """benches/bench_tap.py runs and prints a row per contender (its timings are not checked here)."""
    bench = Path(__file__).resolve().parents[2] / "benches" / "bench_tap.py"
    command = [
        sys.executable,
        str(bench),
        "--calls",
        "20",
        "--rounds",
        "1",
        "--contenders",
        "direct,floor,tap",
    ]
    with anyio.fail_after(60):
        result = await anyio.run_process(command, env=child_env())
    rows = [line.split()[0] for line in result.stdout.decode().splitlines()[2:]]
    assert rows == ["direct", "floor", "tap"]


def test_a_write_cut_short_is_finished(monkeypatch: pytest.MonkeyPatch) -> None:
    """os.write may take part of a chunk (a signal cut it short): the rest follows, nothing is lost."""
    real_write = os.write
    source_r, source_w = os.pipe()
    sink_r, sink_w = os.pipe()
    payload = b"".join(_request(i, "ping") for i in range(5))
    real_write(source_w, payload)
    os.close(source_w)
    recorder = tap_record.Recorder(None, None, colour=False, warn=io.StringIO())
    ended: list[bool] = []
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    tap._pump(source_r, sink_w, "c2s", recorder, lambda: ended.append(True))
    monkeypatch.undo()
    os.close(sink_w)
    with open(sink_r, "rb") as sink:
        assert sink.read() == payload
    os.close(source_r)
    recorder.close()
    assert ended == [True]
    assert recorder.stats["ping"].count == 5
