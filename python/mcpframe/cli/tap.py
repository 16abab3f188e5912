"""`mcpframe tap [--log FILE.jsonl] [--pretty] -- command args`: watch a stdio MCP server's traffic.

The tap runs the server as its child and sits between it and whoever runs the tap (a client): stdin is
copied to the child's stdin and the child's stdout to stdout, byte for byte as read (never decoded and
re-encoded; chunks may be cut differently, the bytes are the same), the child's stderr is its own.
One thread per direction does a blocking read and a blocking write, so a slow reader on either side
holds that direction back (the pipe's own flow control). Forwarding comes first: each chunk read is
written on at once, whole, and all the recording (framing, matching answers to requests, the JSONL
log, the `--pretty` lines) happens on the `Recorder`'s own thread (`cli.tap_record`). On exit a
per-method table goes to stderr and the exit status is the child's; SIGTERM and SIGINT are passed on
to the child.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any, TextIO

from .tap_record import EXACT_LATENCIES, Direction, MethodStats, Recorder

__all__ = ["render_table", "tap_main"]

CHUNK = 64 * 1024


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpframe tap",
        description="Run a stdio MCP server and record every frame between it and its client.",
        epilog="Example, as the command in a client's server config: "
        "mcpframe tap --log /tmp/mcp.jsonl -- python server.py",
    )
    parser.add_argument("--log", metavar="FILE.jsonl", help="append one JSON object per frame to this file")
    parser.add_argument(
        "--pretty",
        action="store_true",
        help="one line per message on stderr (coloured on a terminal or with FORCE_COLOR)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the server's command and arguments")
    return parser


def _colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def _pump(
    source: int, sink: int, direction: Direction, recorder: Recorder, on_eof: Callable[[], None]
) -> None:
    """Copy ``source`` to ``sink`` until EOF or until the sink is gone; hand each chunk to the recorder.

    The loop is kept to the bare read, write and two O(1) calls: a fresh ``os.read`` per chunk (the
    recorder keeps the chunk, so a reused buffer would only add a copy), one ``os.write`` of all of it
    (a blocking pipe takes it whole unless a signal cuts the write short). The chunk is queued for the
    recorder before the write (an append, so requests are queued before their answers), and the
    recorder is woken after it.

    ``on_eof`` runs either way: it closes what the other end needs closed (the child's stdin, so the
    server sees EOF as it would without the tap; the child's stdout, so a server writing to a client
    that is gone gets EPIPE instead of blocking for ever).
    """
    read, write, now = os.read, os.write, time.monotonic
    take, taken = recorder.take, recorder.taken
    try:
        while chunk := read(source, CHUNK):
            take(direction, chunk, now())
            size = len(chunk)
            written = write(sink, chunk)
            if written < size:
                _write_rest(sink, chunk, written)
            taken(direction, size)
    except OSError:  # EPIPE: the side we write to is gone
        pass
    finally:
        recorder.end(direction)
        on_eof()


def _write_rest(sink: int, chunk: bytes, written: int) -> None:
    """Finish a write that a signal cut short after ``written`` bytes."""
    view = memoryview(chunk)[written:]
    while view:
        view = view[os.write(sink, view) :]


def render_table(stats: dict[str, MethodStats]) -> str:
    """The exit table: per method, messages seen and the p50/p99 latency of their answers in ms, exact
    from the recorded latencies; past ``EXACT_LATENCIES`` answers of a method, marked ``~``, read off the
    histogram (within 1%), with a note under the table saying so."""
    rows = [("method", "count", "p50 ms", "p99 ms")]
    estimated = False
    for method in sorted(stats):
        entry = stats[method]
        cells: list[str] = []
        for fraction in (0.50, 0.99):
            value = entry.exact(fraction)
            if value is not None:
                cells.append(f"{value:.3f}")
            elif (value := entry.latency(fraction)) is not None:
                cells.append(f"~{value:.3f}")
                estimated = True
            else:
                cells.append("-")
        rows.append((method, str(entry.count), cells[0], cells[1]))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(
            [row[0].ljust(widths[0]), *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True))]
        )
        for row in rows
    ]
    if estimated:
        lines.append(f"~: more than {EXACT_LATENCIES:,} answers, read off a histogram (within 1%)")
    return "\n".join(lines) + "\n"


class _SignalForwarder:
    """SIGTERM/SIGINT go to the child; one that comes before the child exists is sent once it does."""

    def __init__(self) -> None:
        self.child: subprocess.Popen[bytes] | None = None
        self._early: list[int] = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._forward)

    def _forward(self, signum: int, _frame: Any = None) -> None:
        if self.child is None:
            self._early.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            self.child.send_signal(signum)

    def started(self, child: subprocess.Popen[bytes]) -> None:
        self.child = child
        for signum in self._early:
            self._forward(signum)


def _closer(pipe: IO[bytes] | None) -> Callable[[], None]:
    def close() -> None:
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()

    return close


def _run(command: list[str], recorder: Recorder) -> int | None:
    """Run the child and pump both ways; its exit status, or `None` when it could not be started."""
    signals = _SignalForwarder()
    try:
        # its own process group: a Ctrl-C on the terminal reaches the child once, through the tap
        child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, process_group=0
        )
    except OSError as exc:
        print(f"mcpframe tap: cannot run {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return None
    signals.started(child)
    assert child.stdin is not None
    assert child.stdout is not None
    stdin_fd, stdout_fd = sys.stdin.fileno(), sys.stdout.fileno()
    inbound = threading.Thread(
        target=_pump,
        args=(stdin_fd, child.stdin.fileno(), "c2s", recorder, _closer(child.stdin)),
        name="tap-c2s",
        daemon=True,  # blocked in a read of our stdin when the child ends first: not waited for
    )
    outbound = threading.Thread(
        target=_pump,
        args=(child.stdout.fileno(), stdout_fd, "s2c", recorder, _closer(child.stdout)),
        name="tap-s2c",
    )
    inbound.start()
    outbound.start()
    outbound.join()  # the child's stdout ends when the child does
    status = child.wait()
    return status if status >= 0 else 128 - status


def tap_main(argv: Sequence[str]) -> int:
    """Run ``mcpframe tap`` with ``argv`` (what follows ``tap``); return the exit status (the child's)."""
    args = _parser().parse_args(list(argv))
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("mcpframe tap: no server command (mcpframe tap [--log FILE] -- command args)", file=sys.stderr)
        return 2
    log: TextIO | None = None
    if args.log is not None:
        try:
            log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - closed in finally
        except OSError as exc:
            print(f"mcpframe tap: cannot open --log {args.log}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    pretty = sys.stderr if args.pretty else None
    recorder = Recorder(log, pretty, colour=_colour(sys.stderr), warn=sys.stderr)
    try:
        status = _run(command, recorder)
    finally:
        recorder.close()
        if log is not None:
            log.close()
    if status is None:
        return 127  # no child, no traffic: the one line above says why, without an empty table under it
    sys.stderr.write(render_table(recorder.stats))
    sys.stderr.flush()
    return status
