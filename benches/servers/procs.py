"""What the benchmarks read about, and do with, the processes they start (Linux `/proc`).

One home for the few process helpers every benchmark needs, so that each reports CPU the same way:

- `process_cpu(pid)`: user + system time from `/proc/<pid>/stat` (clock ticks, 10 ms on most kernels:
  good for runs of a second or more);
- `threads_cpu(pid)`: the scheduler's nanoseconds summed over the process's live threads
  (`/proc/<pid>/task/*/schedstat`: fine enough for short runs and per-call figures);
- `redis_server()`: a throwaway `redis-server` on a free loopback port, for the scale-out benchmarks.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

__all__ = ["process_cpu", "redis_server", "threads_cpu"]


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far; 0.0 once /proc no longer has it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu(pid: int) -> float:
    """CPU seconds the live threads of process `pid` have run (scheduler nanoseconds, all threads)."""
    total = 0
    with suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            # A thread may end between the listing and the read: it no longer counts.
            with suppress(OSError), open(f"/proc/{pid}/task/{task}/schedstat", "rb") as stat:
                total += int(stat.read().split()[0])
    return total / 1e9


@contextmanager
def redis_server() -> Iterator[tuple[str, int]]:
    """A throwaway `redis-server` (no persistence) on a free loopback port: yields (URL, pid)."""
    # The tests' helper already knows how to start, wait for and stop one; the benches reuse it.
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.scale.support import RedisProcess  # noqa: PLC0415 - needs the repository root on the path

    program = shutil.which("redis-server")
    if program is None:
        raise SystemExit("redis-server is not installed (scripts/install-redis.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="mcpframe-bench-redis-") as folder:
        redis = RedisProcess(program, Path(folder) / "redis.log")
        redis.start()
        try:
            assert redis.child is not None
            yield redis.url, redis.child.pid
        finally:
            redis.stop()
