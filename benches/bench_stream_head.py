"""Scale-out (issue 15): what naming a POST stream's instance in its events costs (the `h` field).

    python benches/bench_stream_head.py [--calls 3000] [--rounds 5]

A `redis-server` started here on a free loopback port; one `RedisStore` in this process stores what a
resumable POST answered at once stores: the priming event and the answer in one pipeline
(`store_many`), `--calls` times, with the stream described (`describe`: each event carries the head
naming this instance and the request's id, what lets another instance end the stream if this one dies)
and without, rounds interleaved (the order swapped each round). Reported, medians over rounds: CPU per
POST of this process (`time.process_time`) and of redis-server (`/proc/<pid>/stat`, 10 ms ticks), and
wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import TYPE_CHECKING

from servers.procs import process_cpu, redis_server

if TYPE_CHECKING:
    from mcpframe.http.redis_store import RedisStore

_ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}'


async def _posts(store: RedisStore, calls: int, *, head: bool) -> None:
    for n in range(calls):
        stream = f"bench{n}"
        if head:
            store.describe(stream, [n])
        await store.store_many(f"s{n % 16}", stream, [None, _ANSWER])
        store.undescribe(stream)


async def measure(url: str, pid: int, calls: int, rounds: int) -> dict[bool, list[tuple[float, ...]]]:
    """Per contender (`head`): (client CPU µs, redis-server CPU µs, wall µs) per POST, one row a round."""
    from mcpframe.http.redis_store import RedisStore  # noqa: PLC0415 - the redis extra, only when run

    store = RedisStore(url, idle_timeout=60)
    rows: dict[bool, list[tuple[float, ...]]] = {False: [], True: []}
    try:
        await _posts(store, 300, head=True)  # warm up: connections, imports
        for turn in range(rounds):
            for head in (False, True) if turn % 2 == 0 else (True, False):
                cpu, server, wall = time.process_time(), process_cpu(pid), time.perf_counter()
                await _posts(store, calls, head=head)
                cpu = time.process_time() - cpu
                server = process_cpu(pid) - server
                wall = time.perf_counter() - wall
                rows[head].append((cpu / calls * 1e6, server / calls * 1e6, wall / calls * 1e6))
    finally:
        await store.aclose()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="POSTs per contender and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with redis_server() as (url, pid):
        rows = asyncio.run(measure(url, pid, args.calls, args.rounds))
    print("| contender | client CPU µs/POST | redis-server CPU µs/POST | wall µs/POST |")
    print("| --- | ---: | ---: | ---: |")
    for head, name in ((False, "no head"), (True, "head (`h` field)")):
        med = [statistics.median(row[k] for row in rows[head]) for k in range(3)]
        print(f"| {name} | {med[0]:.1f} | {med[1]:.1f} | {med[2]:.1f} |")


if __name__ == "__main__":
    main()
