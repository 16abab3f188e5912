"""Instructions per call of a server process under callgrind, driven over HTTP by the raw client.

The instruction benches (`http_wire_instructions.py`: a Streamable HTTP server; `listen_instructions.py`:
`mcpframe proxy --listen`) share this: the process starts under `valgrind --tool=callgrind
--instr-atstart=no` (their command), prints its URL, gets `WARM_UP` calls uncounted, then counting is switched
on (`callgrind_control -i on`) for the measured calls only, so start-up and warm-up are not in the figure.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable

from servers.http_wire_client import Session

__all__ = ["WARM_UP", "counted_calls", "instructions_per_call"]

WARM_UP = 300
"""Calls made before counting starts (imports, caches and the allocator warmed up)."""


async def counted_calls(session: Session, pid: int, calls: int) -> None:
    """`WARM_UP` calls, then `calls` more with callgrind counting in process `pid`."""
    for rid in range(WARM_UP):
        await session.call(rid)
    subprocess.run(["callgrind_control", "-i", "on", str(pid)], check=True, capture_output=True)
    for rid in range(WARM_UP, WARM_UP + calls):
        await session.call(rid)
    subprocess.run(["callgrind_control", "-i", "off", str(pid)], check=True, capture_output=True)


def instructions_per_call(
    command: Callable[[str], list[str]],
    env: dict[str, str],
    drive: Callable[[int, int], object],
    calls: int,
    keep: str | None = None,
) -> float:
    """Run `command(callgrind_out_file)`, wait for its `http://...` line, `asyncio.run(drive(port, pid))`,
    stop it, and divide the counted instructions by `calls`. `keep`: callgrind's files kept as
    `KEEP.<name>` (for `callgrind_annotate`)."""
    with tempfile.TemporaryDirectory(prefix="mcpframe-cg-") as tmp:
        child = subprocess.Popen(
            command(os.path.join(tmp, "callgrind.out")),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        assert child.stdout is not None
        port = 0
        for line in child.stdout:
            if "http://" in line and not line.startswith("=="):  # "==pid==": valgrind's own lines
                port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
                break
        if not port:
            raise RuntimeError(f"{command('-')[-1]!r} did not start under valgrind")
        threading.Thread(target=lambda: [None for _ in child.stdout or ()], daemon=True).start()
        try:
            asyncio.run(drive(port, child.pid))  # type: ignore[arg-type]
        finally:
            child.terminate()
            child.wait(timeout=60)
        return counted_total(tmp, keep) / calls


def counted_total(folder: str, keep: str | None) -> int:
    """The instructions callgrind counted, from its output files in `folder` (the largest total: one file
    per dump); `keep`: the files moved to `KEEP.<name>` (for `callgrind_annotate`)."""
    total = 0
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as dump:
            for line in dump:
                if line.startswith(("totals:", "summary:")):
                    total = max(total, int(line.split()[1]))
        if keep:
            os.replace(os.path.join(folder, name), f"{keep}.{name}")
    return total
