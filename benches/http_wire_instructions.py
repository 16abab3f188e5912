"""Server instructions per Streamable HTTP `tools/call`: callgrind on the server child, steady on a noisy box.

    python benches/http_wire_instructions.py [--server mcpframe-lean|mcpframe|floor] [--mode json|sse]
        [--era legacy|modern] [--tool aecho|ayield|echo] [--calls 1000] [--pythonpath DIR] [--keep FILE]

Starts the server of `benches/bench_http_wire.py` under `valgrind --tool=callgrind --instr-atstart=no`,
opens one session with the bench's own raw HTTP/1.1 client, checks an answer, makes 300 warm-up calls,
switches instrumentation on (`callgrind_control -i on`), makes `--calls` calls one at a time, switches it
off, and prints the instructions counted divided by `--calls`: the server process's user-space work per
call (parsing, checks, dispatch, handler, encode, write; the kernel's part is not counted). `--pythonpath`
runs another checkout's `python/` (with its native extension) for a before/after. Needs Debian's
`valgrind`. `--keep FILE` keeps callgrind's files as FILE.<name>, for `callgrind_annotate --inclusive=yes
FILE.callgrind.out` (where the instructions of a call go, function by function). Round 4 of issue 11
(benches/README.md) was measured with it.
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
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-instr=no"]
    valgrind.append(f"--callgrind-out-file={out}")
    if args.server == "floor":
        bench = str(ROOT / "benches" / "bench_http_wire.py")
        return [*valgrind, sys.executable, bench, "--serve", "floor", "--mode", args.mode]
    serve = [sys.executable, "-m", "mcpframe", "serve", f"{ROOT}/benches/servers/http_tools.py:server"]
    mode = "auto" if args.mode == "json" else "resumable"
    serve += ["--http", "--port", "0", "--response-mode", mode]
    if args.server == "mcpframe-lean":
        serve += ["--http-server", "mcpframe"]
    return [*valgrind, *serve]


async def _calls(port: int, pid: int, args: argparse.Namespace) -> None:
    session = Session(await open_connection(port), port, args.era, args.tool)
    await session.open()
    await session.check(10_000_000)
    await counted_calls(session, pid, args.calls)


def instructions(args: argparse.Namespace) -> float:
    """The server's instructions per call (see the module doc)."""
    path = args.pythonpath or str(ROOT / "python")
    env = {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0"}
    return instructions_per_call(
        lambda out: _command(args, out), env, lambda port, pid: _calls(port, pid, args), args.calls, args.keep
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--server", choices=("mcpframe-lean", "mcpframe", "floor"), default="mcpframe-lean")
    parser.add_argument("--mode", choices=("json", "sse"), default="json")
    parser.add_argument("--era", choices=("legacy", "modern"), default="legacy")
    parser.add_argument("--tool", choices=("aecho", "ayield", "echo"), default="aecho")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--pythonpath", help="another checkout's python/ folder (before/after)")
    parser.add_argument("--keep", help="keep callgrind's output files as KEEP.<name> (callgrind_annotate)")
    args = parser.parse_args(argv)
    per_call = instructions(args)
    print(f"{args.server} {args.mode} {args.era} {args.tool}: {per_call:,.0f} instructions per call")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
