"""CPU time per new stream of `MemoryEventStore` in a session already at its stream bound (each new stream
evicts the oldest), for several bounds: flat when an eviction is one step, growing with the bound when it
walks the dead slots a dict leaves at its front (issue 13).

    PYTHONPATH=<checkout>/python python benches/event_store_churn.py [--streams 200000]

Each new stream stores a priming event and one message, as a primed POST stream does. The figures are
process CPU time (`time.process_time`), so run two checkouts back to back on the same box to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from mcpframe.http.events import MemoryEventStore

BOUNDS = (256, 4096, 65536)


def churn(bound: int, streams: int) -> float:
    """Nanoseconds of CPU per new stream past `bound`, after checking what the store kept."""
    store = MemoryEventStore(max_streams_per_session=bound)
    for n in range(bound):
        store.store_now("s", f"w{n}", b"x")
    ids = [f"{n:024x}" for n in range(streams)]
    start = time.process_time()
    for stream_id in ids:
        store.store_now("s", stream_id, None)
        store.store_now("s", stream_id, b"m")
    spent = time.process_time() - start
    newest, oldest = ids[-1], ids[-bound - 1] if streams > bound else "w0"
    replay = asyncio.run(store.replay("s", f"{newest}.0"))
    assert replay is not None
    assert replay.events == [(f"{newest}.1", b"m")], replay
    assert asyncio.run(store.replay("s", f"{oldest}.0")) is None  # evicted
    return spent / streams * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200_000)
    args = parser.parse_args()
    for bound in BOUNDS:
        print(f"max_streams_per_session={bound:>6}: {churn(bound, args.streams):8.0f} ns CPU per new stream")


if __name__ == "__main__":
    main()
