"""What the Streamable HTTP client costs per sequential `tools/call`: httpx, the lean path, a raw client.

`python benches/bench_http_client.py --calls 1000 --rounds 5` starts `mcpframe serve --http` on
`benches/servers/http_tools.py:server` (SSE answers), then runs the contenders in interleaved rounds, each
in its own child process (so one's memory and caches do not help another): `connect()` with httpx
(`HttpClientOptions(lean=False)`), `connect()` with the lean keep-alive path (`lean=True`), and the bench's
raw asyncio client (`servers/http_wire_client.py`: the floor, no Session). Prints the median client CPU
(process time) and wall time per call of each. The server's CPU is not counted.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CLIENT = """
import asyncio, sys, time
from mcpframe.http import connect
from mcpframe.http.options import HttpClientOptions

async def main(url, n, lean):
    options = HttpClientOptions(lean=lean, get_stream=False)
    async with connect(url, transport="streamable-http", mode="legacy", http_options=options) as client:
        for i in range(20):
            await client.call_tool("echo", {"text": "warm"})
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(n):
            await client.call_tool("echo", {"text": f"hi {i}"})
        print((time.process_time() - cpu) / n * 1e6, (time.perf_counter() - wall) / n * 1e6)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "lean"))
"""

RAW = """
import asyncio, sys, time
sys.path.insert(0, sys.argv[4])
from servers.http_wire_client import Session, open_connection

async def main(port, n):
    conn = await open_connection(port)
    session = Session(conn, port, "legacy", "echo")
    await session.open()
    for i in range(20):
        await session.call(i)
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(n):
        await session.call(i)
    print((time.process_time() - cpu) / n * 1e6, (time.perf_counter() - wall) / n * 1e6)

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_one(kind: str, port: int, calls: int) -> tuple[float, float]:
    """One contender's (CPU us, wall us) per call, measured in a child process."""
    url = f"http://127.0.0.1:{port}/mcp"
    if kind == "raw":
        argv = [sys.executable, "-c", RAW, str(port), str(calls), kind, str(HERE)]
    else:
        argv = [sys.executable, "-c", CLIENT, url, str(calls), kind]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=300).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    port = free_port()
    serve = ["serve", "benches/servers/http_tools.py:server", "--http", "--port", str(port)]
    server = subprocess.Popen(
        [sys.executable, "-m", "mcpframe", *serve],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MCPFRAME_HTTP_LEAN": "0"},
    )
    try:
        assert server.stderr is not None
        while "Streamable HTTP on" not in server.stderr.readline():  # the server says it listens
            if server.poll() is not None:
                raise SystemExit("the server did not start")
        kinds = ["httpx", "lean", "raw"]
        figures: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
        for _ in range(args.rounds):
            for kind in kinds:
                figures[kind].append(run_one(kind, port, args.calls))
        for kind in kinds:
            cpu = statistics.median(c for c, _ in figures[kind])
            wall = statistics.median(w for _, w in figures[kind])
            print(f"{kind:6} client CPU {cpu:7.0f} us/call   wall {wall:7.0f} us/call")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
