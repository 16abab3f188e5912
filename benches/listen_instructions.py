"""Proxy instructions per forwarded `tools/call` of `mcpframe proxy --listen`: callgrind on the proxy process.

    python benches/listen_instructions.py [--http-server mcpframe|uvicorn] [--accept both|json]
        [--calls 1000] [--pythonpath DIR] [--keep PREFIX]

Starts `mcpframe proxy --listen` in front of `bench_proxy_http.py --serve-stdio` (its `echo` tool) under
`valgrind --tool=callgrind --instr-atstart=no` (the child is not traced), opens one session with the
benchmarks' raw HTTP/1.1 client, checks an answer, makes 300 warm-up calls, switches instrumentation on
(`callgrind_control -i on`), makes `--calls` calls one at a time, switches it off, and prints the proxy's
instructions divided by `--calls`: its user-space work per forwarded call (the kernel's part is not
counted), steady on a noisy machine where CPU time is not. `--accept json`: the client takes JSON only
(else JSON and SSE: SSE answers in the default `resumable` mode). `--pythonpath` runs another checkout's
`python/` (with its native extension) for a before/after. Needs Debian's `valgrind`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

from servers.http_wire_client import Session, open_connection  # noqa: E402

WARM_UP = 300


def _command(args: argparse.Namespace, out: str) -> list[str]:
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    child = [sys.executable, str(ROOT / "benches" / "bench_proxy_http.py"), "--serve-stdio"]
    proxy = [sys.executable, "-m", "mcpframe", "proxy", "--listen", "http://127.0.0.1:0/mcp"]
    return [*valgrind, *proxy, "--http-server", args.http_server, "--", *child]


async def _calls(port: int, pid: int, args: argparse.Namespace) -> None:
    session = Session(await open_connection(port), port, "legacy", "echo")
    if args.accept == "json":
        session.base = session.head = session.base.replace(b", text/event-stream", b"")
    await session.open()
    await session.check(10_000_000)
    for rid in range(WARM_UP):
        await session.call(rid)
    subprocess.run(["callgrind_control", "-i", "on", str(pid)], check=True, capture_output=True)
    for rid in range(WARM_UP, WARM_UP + args.calls):
        await session.call(rid)
    subprocess.run(["callgrind_control", "-i", "off", str(pid)], check=True, capture_output=True)


def instructions(args: argparse.Namespace) -> float:
    """The proxy's instructions per call (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="mcpframe-cg-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        path = args.pythonpath or str(ROOT / "python")
        env = {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0"}
        child = subprocess.Popen(
            _command(args, out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert child.stdout is not None
        port = 0
        for line in child.stdout:
            if "Streamable HTTP on http://" in line:
                port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
                break
        if not port:
            raise RuntimeError("the proxy did not start under valgrind")
        threading.Thread(target=lambda: [None for _ in child.stdout or ()], daemon=True).start()
        try:
            asyncio.run(_calls(port, child.pid, args))
        finally:
            child.terminate()
            child.wait(timeout=60)
        total = 0
        for name in os.listdir(tmp):
            with open(os.path.join(tmp, name)) as dump:
                for line in dump:
                    if line.startswith(("totals:", "summary:")):
                        total = max(total, int(line.split()[1]))
        if args.keep:
            for name in os.listdir(tmp):
                os.replace(os.path.join(tmp, name), f"{args.keep}.{name}")
        return total / args.calls


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--http-server", choices=("mcpframe", "uvicorn"), default="mcpframe")
    parser.add_argument("--accept", choices=("both", "json"), default="both")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--pythonpath", help="another checkout's python/ folder (before/after)")
    parser.add_argument("--keep", help="keep callgrind's output files as KEEP.<name> (callgrind_annotate)")
    args = parser.parse_args(argv)
    per_call = instructions(args)
    print(f"listen {args.http_server} accept {args.accept}: {per_call:,.0f} instructions per call")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
