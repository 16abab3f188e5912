"""What `mcpframe tap` adds to a stdio round trip: per-call latency and the tap's own CPU.

    PYTHONPATH=<checkout>/python python benches/bench_tap.py [--calls 5000] [--rounds 5]
        [--baseline <other checkout>/python] [--contenders direct,floor,tap,tap --log]

One client sends `ping` requests one at a time (write a line, read its answer) to a minimal echo server
(a few lines of Python, so the server's own cost is small and the same for all) run several ways:
directly; through the thread floor (two Python threads copying bytes, no recording: the lower bound for
a tap written in Python); through `mcpframe tap`, and through `mcpframe tap --log FILE`; with
`--baseline`, also through another checkout's tap (`base tap`, `base tap --log`), for before/after in one
run. The rounds interleave the contenders; the table gives medians over rounds of the per-round p50 and
p99 of one call, the p50 added over the direct run, and the CPU (utime + stime from /proc, Linux) per call
of the process in the middle (the tap, with its threads).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ECHO = (
    "import sys\n"
    "out = sys.stdout.buffer\n"
    "for line in sys.stdin.buffer:\n"
    "    i = line.index(b'\"id\":') + 5\n"
    "    rid = line[i:line.index(b',', i)]\n"
    '    out.write(b\'{"jsonrpc":"2.0","id":\' + rid + b\',"result":{}}\\n\')\n'
    "    out.flush()\n"
)
# The floor: what any tap made of two Python threads costs, with nothing recorded.
FLOOR = (
    "import os, subprocess, sys, threading\n"
    "child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)\n"
    "def pump(src, dst, close):\n"
    "    while chunk := os.read(src, 65536):\n"
    "        os.write(dst, chunk)\n"
    "    close()\n"
    "threading.Thread(target=pump, args=(0, child.stdin.fileno(), child.stdin.close), daemon=True).start()\n"
    "pump(child.stdout.fileno(), 1, lambda: None)\n"
    "sys.exit(child.wait())\n"
)
TAP = [sys.executable, "-m", "mcpframe", "tap"]
SERVER = [sys.executable, "-c", ECHO]
ALL = ("direct", "floor", "base tap", "base tap --log", "tap", "tap --log")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _round(command: list[str], calls: int, env: dict[str, str] | None) -> tuple[list[float], float]:
    """Per-call seconds, and the CPU seconds of the process we started (the tap, or the server)."""
    child = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
        env=env,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    # a buffered reader over the pipe: one read may bring more than a line (never here: one call at a time)
    answers = open(child.stdout.fileno(), "rb", buffering=65536, closefd=False)  # noqa: SIM115
    child.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"ping"}\n')  # warm up: the tap and server started
    answers.readline()
    start_cpu = _cpu_seconds(child.pid)
    times = []
    lines = [b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(1, calls + 1)]
    for line in lines:
        t0 = time.perf_counter()
        child.stdin.write(line)
        answer = answers.readline()
        times.append(time.perf_counter() - t0)
        assert answer.startswith(b'{"jsonrpc":"2.0","id":'), answer
    cpu = _cpu_seconds(child.pid) - start_cpu
    child.stdin.close()
    child.wait(timeout=60)
    return times, cpu


def _pct(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", metavar="DIR", help="another checkout's python/ dir: its tap too")
    parser.add_argument("--contenders", default=",".join(ALL), help=f"comma-separated, of: {', '.join(ALL)}")
    args = parser.parse_args()
    chosen = [name for name in args.contenders.split(",") if args.baseline or not name.startswith("base")]
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "tap.jsonl")
        base_env = {**os.environ, "PYTHONPATH": args.baseline or ""}
        contenders = {
            "direct": (SERVER, None),
            "floor": ([sys.executable, "-c", FLOOR, *SERVER], None),
            "base tap": ([*TAP, "--", *SERVER], base_env),
            "base tap --log": ([*TAP, "--log", log + ".base", "--", *SERVER], base_env),
            "tap": ([*TAP, "--", *SERVER], None),
            "tap --log": ([*TAP, "--log", log, "--", *SERVER], None),
        }
        contenders = {name: contenders[name] for name in chosen}
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, (command, env) in contenders.items():
                times, cpu = _round(command, args.calls, env)
                results[name].append((_pct(times, 0.5), _pct(times, 0.99), cpu / args.calls))
    direct_p50 = statistics.median(r[0] for r in results["direct"]) if "direct" in results else 0.0
    backend = os.environ.get("MCPFRAME_BACKEND", "auto")
    print(
        f"{args.calls} sequential pings x {args.rounds} interleaved rounds, medians; "
        f"MCPFRAME_BACKEND={backend}; load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'contender':<15} {'p50 µs':>8} {'p99 µs':>8} {'added p50 µs':>13} {'CPU µs/call':>12}")
    for name, rows in results.items():
        p50 = statistics.median(r[0] for r in rows)
        p99 = statistics.median(r[1] for r in rows)
        cpu = statistics.median(r[2] for r in rows)
        cpu_text = f"{cpu * 1e6:12.1f}" if name != "direct" else f"{'(server)':>12}"
        print(f"{name:<15} {p50 * 1e6:8.1f} {p99 * 1e6:8.1f} {(p50 - direct_p50) * 1e6:13.1f} {cpu_text}")


if __name__ == "__main__":
    main()
