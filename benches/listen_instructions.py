"""Proxy instructions per forwarded `tools/call` of `mcpframe proxy --listen`: callgrind on the proxy process.

    python benches/listen_instructions.py [--http-server mcpframe|uvicorn] [--accept both|json]
        [--response-mode resumable|auto|sse] [--tool echo|aecho] [--multiplex session|shared]
        [--calls 1000] [--pythonpath DIR] [--keep PREFIX]

Starts `mcpframe proxy --listen` in front of `bench_proxy_http.py --serve-stdio` (calling its `echo` tool,
a `def`, or with `--tool aecho` the same as `async def`: the proxy forwards both alike) under
`valgrind --tool=callgrind --instr-atstart=no` (the child is not traced), opens one session with the
benchmarks' raw HTTP/1.1 client, checks an answer, makes 300 warm-up calls, switches instrumentation on
(`callgrind_control -i on`), makes `--calls` calls one at a time, switches it off, and prints the proxy's
instructions divided by `--calls`: its user-space work per forwarded call (the kernel's part is not
counted), steady on a noisy machine where CPU time is not. `--accept json`: the client takes JSON only
(else JSON and SSE: SSE answers in the default `resumable` mode; with `--response-mode auto`, JSON answers
within `stream_after`). `--pythonpath` runs another checkout's
`python/` (with its native extension) for a before/after. `--multiplex shared`: the session goes over the
proxy's shared child (`mcpframe proxy --listen --multiplex shared`), ids spliced. Needs Debian's `valgrind`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

from servers.callgrind import counted_calls, instructions_per_call  # noqa: E402
from servers.http_wire_client import Session, open_connection  # noqa: E402


def _command(args: argparse.Namespace, out: str) -> list[str]:
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    child = [sys.executable, str(ROOT / "benches" / "bench_proxy_http.py"), "--serve-stdio"]
    proxy = [sys.executable, "-m", "mcpframe", "proxy", "--listen", "http://127.0.0.1:0/mcp"]
    mode = ["--response-mode", args.response_mode]
    shared = ["--multiplex", "shared"] if args.multiplex == "shared" else []
    return [*valgrind, *proxy, "--http-server", args.http_server, *mode, *shared, "--", *child]


async def _calls(port: int, pid: int, args: argparse.Namespace) -> None:
    session = Session(await open_connection(port), port, "legacy", args.tool)
    if args.accept == "json":
        session.base = session.head = session.base.replace(b", text/event-stream", b"")
    await session.open()
    await session.check(10_000_000)
    await counted_calls(session, pid, args.calls)


def instructions(args: argparse.Namespace) -> float:
    """The proxy's instructions per call (see the module doc)."""
    path = args.pythonpath or str(ROOT / "python")
    env = {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0"}
    return instructions_per_call(
        lambda out: _command(args, out), env, lambda port, pid: _calls(port, pid, args), args.calls, args.keep
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--http-server", choices=("mcpframe", "uvicorn"), default="mcpframe")
    parser.add_argument("--accept", choices=("both", "json"), default="both")
    parser.add_argument("--response-mode", choices=("resumable", "auto", "sse"), default="resumable")
    parser.add_argument("--tool", choices=("echo", "aecho"), default="echo", help="the child's tool called")
    parser.add_argument("--multiplex", choices=("session", "shared"), default="session")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--pythonpath", help="another checkout's python/ folder (before/after)")
    parser.add_argument("--keep", help="keep callgrind's output files as KEEP.<name> (callgrind_annotate)")
    args = parser.parse_args(argv)
    per_call = instructions(args)
    what = f"listen {args.http_server} accept {args.accept} {args.response_mode} tool {args.tool}"
    what += " shared" if args.multiplex == "shared" else ""
    print(f"{what}: {per_call:,.0f} instructions per call")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
