"""Scale-out (issue 15): what a legacy POST `/messages/` costs on an instance not holding its session.

    python benches/bench_legacy_relay.py [--posts 200] [--rounds 5]

Two `mcpframe serve tests/scale/app.py --http --store redis://...` instances share a `redis-server` started
here on a free loopback port. One legacy session's GET `/sse` is held by instance A; the same notification
is POSTed `--posts` times to A (`local`) and to B (`relayed`: B looks the session up, publishes the body,
A queues it and answers through Redis, B answers 202), one POST at a time, rounds interleaved. Reported:
p50/p99 latency of a POST and CPU per POST of both instances plus redis-server (`/proc/<pid>/stat`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.scale.support import Instance  # after the root is on the path

from servers.procs import process_cpu, redis_server

_NOTE = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


async def endpoint_of(lines: object) -> str:
    """The data of the stream's `endpoint` event."""
    async for line in lines:  # type: ignore[attr-defined]
        if line.startswith("data:"):
            return str(line[5:].strip())
    raise RuntimeError("no endpoint event")


async def measure(instances: list[Instance], pids: list[int], posts: int, rounds: int) -> None:
    bases = [i.url.rsplit("/", 1)[0] for i in instances]
    latency: dict[str, list[float]] = {"local": [], "relayed": []}
    cpu: dict[str, float] = {"local": 0.0, "relayed": 0.0}
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(timeout=30) as http:
        get = http.stream("GET", bases[0] + "/sse", headers={"accept": "text/event-stream"})
        async with get as stream:
            lines = stream.aiter_lines()  # kept: dropping it would close the stream
            endpoint = await endpoint_of(lines)
            for _ in range(rounds):
                for name, base in (("local", bases[0]), ("relayed", bases[1])):
                    before = sum(process_cpu(pid) for pid in pids)
                    for _ in range(posts):
                        start = time.perf_counter()
                        reply = await http.post(base + endpoint, content=_NOTE, headers=headers)
                        latency[name].append(time.perf_counter() - start)
                        if reply.status_code != 202:
                            raise RuntimeError(f"{name}: {reply.status_code} {reply.text}")
                    cpu[name] += sum(process_cpu(pid) for pid in pids) - before
    print(f"{'':8} {'p50 ms':>7} {'p99 ms':>7} {'CPU ms/POST':>12}")
    for name, values in latency.items():
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        per_post = cpu[name] / len(values) * 1000
        print(f"{name:8} {statistics.median(values) * 1000:7.2f} {p99 * 1000:7.2f} {per_post:12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=200, help="POSTs per configuration and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="bench-legacy-relay-"))
    with redis_server() as (url, redis_pid):
        instances: list[Instance] = []
        try:
            instances = [Instance(["--store", url], logs / f"instance{n}.log") for n in range(2)]
            pids = [i.child.pid for i in instances] + [redis_pid]
            anyio.run(measure, instances, pids, args.posts, args.rounds)
        finally:
            for instance in instances:
                instance.stop()


if __name__ == "__main__":
    main()
