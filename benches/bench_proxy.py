"""`mcpframe proxy -- command` (stdio to stdio) against a direct connection and FastMCP's `create_proxy`.

    PYTHONPATH=<checkout>/python python benches/bench_proxy.py [--calls 5000] [--rounds 5] [--latency 1000]
        [--contenders direct,mcpframe,fastmcp] [--fastmcp-calls 1000] [--base TREE]
    PYTHONPATH=<checkout>/python python benches/bench_proxy.py --forwarder-only

The server is the same in every row: mcpframe's `echo` tool server (`servers/mcpframe_echo.py`), run
directly, behind `mcpframe proxy --`, or behind FastMCP 4.1's `create_proxy` over a stdio transport. The
client (`servers/stdio_client.py`) pipelines `--calls` `tools/call echo` requests (all in flight at once)
and checks every answer before anything counts, then makes `--latency` calls one at a time. Rounds
interleave the contenders (order rotated); figures are medians over rounds: calls/s, p50/p99 of one call
and the p50 added over the direct connection, the CPU of the process the client talks to (the proxy; for
the direct row the server) per pipelined call and per call one at a time ("alone"), from /proc, and that
process's RSS after the calls.
`--calls 1000000 --rounds 1 --contenders mcpframe` is the flat-RSS run: RSS sampled 20 times along it.
`loop-floor` and `thread-floor` (`servers/relay_floor.py`) copy bytes both ways with nothing parsed, in an
asyncio readiness callback per direction or a blocked thread per direction: floors for the added latency.
`mcpframe-loop` and `mcpframe-thread` are the proxy with `--pump loop` and `--pump thread` (`mcpframe` is
the default: the thread pump on pipes); `base` is
`mcpframe proxy --` run from another checkout (`--base TREE`, its `python/` first on the path of the proxy
and its server): the build before a change, in the same run.
FastMCP's proxy is slow enough that it gets `--fastmcp-calls` pipelined calls (per-call figures agree).
`--forwarder-only` measures the `Forwarder` in-process (no pipes, no event-loop turns): the CPU of routing
one request up and one answer back, the part a native forwarder would replace.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
if importlib.util.find_spec("mcpframe") is None:
    sys.path.insert(0, str(ROOT.parent / "python"))

import mcpframe  # noqa: E402
from mcpframe import core  # noqa: E402
from servers.stdio_client import Child, ServerKind, pipelined, sequential  # noqa: E402

ECHO = str(ROOT / "servers" / "mcpframe_echo.py")
RELAY_FLOOR = str(ROOT / "servers" / "relay_floor.py")
FASTMCP_PROXY = (
    "import sys\n"
    "from fastmcp.client.transports import StdioTransport\n"
    "from fastmcp.server import create_proxy\n"
    "create_proxy(StdioTransport(sys.executable, [sys.argv[1]])).run(show_banner=False)\n"
)
COMMANDS = {
    "direct": [sys.executable, ECHO],
    "mcpframe": [sys.executable, "-m", "mcpframe", "proxy", "--", sys.executable, ECHO],
    "mcpframe-loop": [
        sys.executable,
        "-m",
        "mcpframe",
        "proxy",
        "--pump",
        "loop",
        "--",
        sys.executable,
        ECHO,
    ],
    "mcpframe-thread": [
        sys.executable,
        "-m",
        "mcpframe",
        "proxy",
        "--pump",
        "thread",
        "--",
        sys.executable,
        ECHO,
    ],
    "base": [sys.executable, "-m", "mcpframe", "proxy", "--", sys.executable, ECHO],
    "fastmcp": [sys.executable, "-c", FASTMCP_PROXY, ECHO],
    # hand-written byte copiers, no proxy work: what an event loop (or a thread per direction) costs per hop
    "loop-floor": [sys.executable, RELAY_FLOOR, "loop", sys.executable, ECHO],
    "thread-floor": [sys.executable, RELAY_FLOOR, "threads", sys.executable, ECHO],
}


class CommandChild(Child):
    """A `Child` (the bench client's end of a server) started from a whole command line."""

    base: Path | None = None  # `--base`: the checkout the `base` contender runs from

    def __init__(self, key: str, command: list[str]) -> None:
        source = Path(mcpframe.__file__).resolve().parent.parent
        if key == "base":
            if self.base is None:
                raise ValueError("the base contender needs --base TREE")
            source = self.base / "python"
        env = {**os.environ, "PYTHONPATH": str(source)}
        self.kind = ServerKind(key, command[-1])
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env, bufsize=0
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.decoder = core.Decoder()
        self.next_id = 1


def one_round(key: str, calls: int, latency: int, rss_samples: list[int] | None = None) -> dict[str, float]:
    """Start `key`, warm it up, time `calls` pipelined and `latency` sequential calls; stop it."""
    child = CommandChild(key, COMMANDS[key])
    try:
        child.handshake()
        pipelined(child, 200, 0)  # warm-up: imports, first allocations, the proxy's child started
        timing = pipelined(child, calls, 0, rss_samples)
        before = child.cpu_seconds()
        times = sorted(sequential(child, latency)) if latency else [0.0]
        alone = (child.cpu_seconds() - before) / max(1, latency)
        return {
            "calls_s": calls / timing.seconds,
            "cpu_us": timing.cpu / calls * 1e6,
            "alone_us": alone * 1e6,
            "p50_us": times[len(times) // 2] * 1e6,
            "p99_us": times[min(len(times) - 1, int(len(times) * 0.99))] * 1e6,
            "rss_mib": child.rss_kib() / 1024,
        }
    finally:
        child.close()


def run(contenders: list[str], calls: int, rounds: int, latency: int, fastmcp_calls: int) -> dict[str, Any]:
    """Interleaved rounds; per contender the median of each figure (and RSS samples of the last round)."""
    results: dict[str, list[dict[str, float]]] = {key: [] for key in contenders}
    samples: dict[str, list[int]] = {key: [] for key in contenders}
    for index in range(rounds):
        order = contenders[index % len(contenders) :] + contenders[: index % len(contenders)]
        for key in order:
            count = min(calls, fastmcp_calls) if key == "fastmcp" else calls
            samples[key] = []
            results[key].append(one_round(key, count, latency, samples[key]))
    medians = {
        key: {field: statistics.median(r[field] for r in rows) for field in rows[0]}
        for key, rows in results.items()
    }
    return {"medians": medians, "rss_samples": samples}


def render(medians: dict[str, dict[str, float]]) -> str:
    """The markdown table of `run`'s medians."""
    direct = medians.get("direct")
    lines = [
        "| contender | calls/s | x direct | p50 us | p99 us | added p50 us | CPU us/call | alone | RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, m in medians.items():
        ratio = f"{m['calls_s'] / direct['calls_s']:.2f}" if direct else "-"
        added = f"{m['p50_us'] - direct['p50_us']:.0f}" if direct else "-"
        lines.append(
            f"| {key} | {m['calls_s']:,.0f} | {ratio} | {m['p50_us']:.0f} | {m['p99_us']:.0f} | {added} "
            f"| {m['cpu_us']:.1f} | {m['alone_us']:.0f} | {m['rss_mib']:.1f} |"
        )
    return "\n".join(lines)


def forwarder_cost(calls: int = 20000, rounds: int = 5) -> dict[str, float]:
    """The Forwarder alone, no pipes: CPU µs per request routed up and per answer routed back (medians).

    One session, an upstream that takes every write at once; the requests arrive as one chunk and the
    answers (with the upstream ids the forwarder chose) as another, as a pipelined stream would bring them.
    """
    import anyio  # noqa: PLC0415 - only this measurement needs it

    from mcpframe.proxy.forward import Forwarder  # noqa: PLC0415

    class NullLink:
        async def send(self, data: bytes) -> None: ...
        def send_nowait(self, data: bytes) -> int:
            sent.append(data)
            return len(data)

    async def measure() -> tuple[float, float]:
        link = NullLink()
        forwarder = Forwarder(lambda: _ready(link))  # type: ignore[arg-type, return-value]
        await forwarder.ensure_upstream()
        session = forwarder.open_session(_ignore, len)
        chunk = b"".join(requests_bytes)
        sent.clear()
        t0 = time.process_time()
        session.feed_nowait(chunk)
        t1 = time.process_time()
        ids = [m.id for m in core.Decoder().feed(b"".join(sent))]
        answers = b"".join(core.encode_result(i, {"content": []}) for i in ids)
        reader = forwarder._new_reader()
        t2 = time.process_time()
        forwarder._route_chunk(reader, answers)
        t3 = time.process_time()
        return (t1 - t0) / calls * 1e6, (t3 - t2) / calls * 1e6

    sent: list[bytes] = []
    requests_bytes = [
        core.encode_request(i, "tools/call", {"name": "echo", "arguments": {"text": f"echo {i}"}})
        for i in range(calls)
    ]
    up, down = [], []
    for _ in range(rounds):
        a, b = anyio.run(measure)
        up.append(a)
        down.append(b)
    return {"request_us": statistics.median(up), "answer_us": statistics.median(down)}


async def _ready(link: object) -> object:
    return link


async def _ignore(data: bytes) -> None:
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency", type=int, default=1000, help="one-at-a-time calls per round")
    parser.add_argument("--contenders", default="direct,mcpframe,fastmcp")
    parser.add_argument("--fastmcp-calls", type=int, default=1000)
    parser.add_argument("--forwarder-only", action="store_true", help="only the in-process Forwarder cost")
    parser.add_argument("--base", type=Path, help="the checkout the `base` contender runs from")
    args = parser.parse_args()
    CommandChild.base = args.base
    if args.forwarder_only:
        cost = forwarder_cost()
        print(
            f"core {core.BACKEND}: Forwarder CPU per request up {cost['request_us']:.2f} us, "
            f"per answer back {cost['answer_us']:.2f} us (20,000 in one chunk, median of 5)"
        )
        return
    contenders = [c for c in args.contenders.split(",") if c]
    unknown = set(contenders) - set(COMMANDS)
    if unknown:
        parser.error(f"unknown contenders {sorted(unknown)}; choose from {sorted(COMMANDS)}")
    outcome = run(contenders, args.calls, args.rounds, args.latency, args.fastmcp_calls)
    print(f"core {core.BACKEND}, {args.calls} pipelined calls, {args.rounds} rounds (medians)")
    print(render(outcome["medians"]))
    for key, samples in outcome["rss_samples"].items():
        if samples:
            first, last = samples[0] / 1024, samples[-1] / 1024
            print(f"{key}: RSS along the last round (MiB): {first:.1f} .. {last:.1f}")


def test_forwarder_cost_runs() -> None:
    """The in-process measurement routes every request and every answer (else it would raise)."""
    cost = forwarder_cost(calls=200, rounds=1)
    assert cost["request_us"] >= 0
    assert cost["answer_us"] >= 0


def test_bench_proxy_answers() -> None:
    """A tiny run: every answer through the proxy was checked, and the table has its rows."""
    outcome = run(["direct", "mcpframe"], calls=50, rounds=1, latency=5, fastmcp_calls=50)
    table = render(outcome["medians"])
    assert "| mcpframe |" in table
    assert outcome["medians"]["mcpframe"]["calls_s"] > 0


def test_bench_proxy_floors_answer() -> None:
    """The floors pass every answer through unchanged (the client checks each one)."""
    outcome = run(["loop-floor", "thread-floor"], calls=50, rounds=1, latency=5, fastmcp_calls=50)
    assert outcome["medians"]["loop-floor"]["calls_s"] > 0
    assert outcome["medians"]["thread-floor"]["calls_s"] > 0


if __name__ == "__main__":
    main()
