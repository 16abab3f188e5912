"""Instructions per forwarded call of `mcpframe proxy --` (stdio to stdio): callgrind on the proxy process.

    python benches/proxy_instructions.py [--calls 1000] [--pipelined 5000] [--pump auto|thread|loop]
        [--pythonpath DIR/python] [--keep PREFIX]

The proxy runs under `valgrind --tool=callgrind --instr-atstart=no` (all its threads; the echo server it
starts, `servers/mcpframe_echo.py`, is not traced) in front of the bench client of `bench_proxy.py`. After
the handshake, `WARM_UP` calls one at a time and 200 pipelined (every answer checked), counting is switched
on (`callgrind_control -i on`) for `--calls` calls made one at a time, then for `--pipelined` calls all in
flight at once, each counted on its own, so start-up and warm-up are in neither figure. Timings under
valgrind mean nothing; instructions do not move between runs the way CPU time does on a shared machine.
`--pythonpath` runs another checkout's proxy (its `python/`, with its native extension) for a before/after.
Needs Debian's `valgrind`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from bench_proxy import ECHO, CommandChild  # noqa: E402
from servers.callgrind import WARM_UP  # noqa: E402
from servers.stdio_client import pipelined, sequential  # noqa: E402


def _switch(pid: int, state: str) -> None:
    subprocess.run(["callgrind_control", "-i", state, str(pid)], check=True, capture_output=True)


def _dump(pid: int) -> None:
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)


def measure(
    calls: int, pipelined_calls: int, pump: str, source: Path | None, keep: str | None
) -> tuple[float, float]:
    """Instructions per call made alone, and per call pipelined, in the proxy process (module doc)."""
    with tempfile.TemporaryDirectory(prefix="mcpframe-cg-proxy-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
        proxy = ["-m", "mcpframe", "proxy", "--pump", pump, "--", sys.executable, ECHO]
        command = [*valgrind, sys.executable, *proxy]
        if source is not None:
            CommandChild.base = source.parent
        child = CommandChild("base" if source is not None else "mcpframe", command)
        try:
            child.handshake()
            sequential(child, WARM_UP)
            pipelined(child, 200, 0)
            _switch(child.proc.pid, "on")
            sequential(child, calls)
            _switch(child.proc.pid, "off")
            _dump(child.proc.pid)  # part 1: the calls alone (a dump starts the counts again)
            _switch(child.proc.pid, "on")
            pipelined(child, pipelined_calls, 0)
            _switch(child.proc.pid, "off")
        finally:
            child.close()
        parts = _parts(tmp)
        if keep:
            for name in os.listdir(tmp):
                os.replace(os.path.join(tmp, name), f"{keep}.{name}")
        return parts[1] / calls, parts[2] / pipelined_calls


def _parts(folder: str) -> dict[int, int]:
    """Each callgrind dump's `totals:` by its `part:` (1: `_dump`'s, 2: the one at exit)."""
    parts: dict[int, int] = {}
    for name in os.listdir(folder):
        part = 0
        with open(os.path.join(folder, name)) as dump:
            for line in dump:
                if line.startswith("part:"):
                    part = int(line.split()[1])
                elif line.startswith("totals:"):
                    parts[part] = int(line.split()[1])
    return parts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls made one at a time, counted")
    parser.add_argument("--pipelined", type=int, default=5000, help="calls in flight at once, counted")
    parser.add_argument("--pump", choices=("auto", "thread", "loop"), default="auto")
    parser.add_argument("--pythonpath", help="another checkout's python/ folder")
    parser.add_argument("--keep", help="keep callgrind's output files as KEEP.<name> (callgrind_annotate)")
    args = parser.parse_args(argv)
    source = Path(args.pythonpath).resolve() if args.pythonpath else None
    alone, piped = measure(args.calls, args.pipelined, args.pump, source, args.keep)
    print(
        f"mcpframe proxy -- (pump {args.pump}): {alone:,.0f} instructions per call alone, "
        f"{piped:,.0f} per pipelined call"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
