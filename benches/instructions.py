"""Server instructions per sequential `tools/call`, counted by callgrind (steady on a noisy machine).

    python benches/instructions.py [--calls 20000] [--pythonpath DIR]

Runs `benches/servers/mcpframe_echo.py` (an `async def echo` tool) under `valgrind --tool=callgrind`
twice, once answering one call and once answering `--calls + 1`, and prints the difference divided by
`--calls`: the whole server process's instructions per call (read, decode, dispatch, handler, encode,
write), start-up excluded. `PYTHONHASHSEED=0` keeps the two runs' start-up alike. `--pythonpath` measures
another checkout (its `python/` folder, with its native extension built) with the same script, for a
before/after. Every answer is checked before anything is counted. Needs `valgrind` (Debian's package);
20,000 calls take about a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mcpframe import core  # the backend the children pick too (the same MCPFRAME_BACKEND)

SERVER = Path(__file__).resolve().parent / "servers" / "mcpframe_echo.py"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "b", "version": "0"},
    },
}
CALL = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}\n'


def instructions(calls: int, pythonpath: str | None) -> int:
    """Total instructions of one server process that answers `calls` sequential calls after initialize."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        env = dict(os.environ, PYTHONHASHSEED="0")
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, str(SERVER)]
        child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        child.stdin.flush()
        assert b'"protocolVersion"' in child.stdout.readline()
        child.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for rid in range(1, calls + 1):
            child.stdin.write(CALL % rid)
            child.stdin.flush()
            answer = json.loads(child.stdout.readline())
            assert answer["id"] == rid, answer
            assert answer["result"]["content"][0]["text"] == "hi", answer
        child.stdin.close()
        child.wait(timeout=600)
        for line in Path(out).read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("callgrind wrote no summary")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--pythonpath", help="another checkout's python/ folder (before/after)")
    args = parser.parse_args()
    base = instructions(1, args.pythonpath)
    total = instructions(args.calls + 1, args.pythonpath)
    per_call = (total - base) / args.calls
    where = args.pythonpath or "this checkout"
    print(f"{where}, {core.BACKEND} core: {per_call:,.0f} instructions per sequential tools/call", end="")
    print(f" ({args.calls:,} calls)")


if __name__ == "__main__":
    main()
