"""The floor: no framework, a bare stdin/stdout loop with orjson answering what the benchmark sends.

It reads stdin in 64 KiB chunks, splits lines, answers `initialize`, `ping`, `tools/list` and
`tools/call` of `echo`, ignores notifications, and writes all the answers of one chunk with one `write`.
No validation beyond what orjson does, no concurrency, no cancellation: what any real server must add on
top of this is exactly the overhead the benchmark compares against.

`tools/call` of `nap` answers like `echo`, 10 ms later: the least any server can do for a handler that
waits (one timer per call, here a heap polled with `select` only while timers are pending, so the
`echo` path is the same bare loop).
"""

from __future__ import annotations

import heapq
import os
import select
import time
from typing import Any

import orjson

NAP = 0.010
TOOLS = [
    {
        "name": name,
        "description": "Return `text` unchanged" + (" after 10 ms." if name == "nap" else "."),
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    }
    for name in ("echo", "nap")
]


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one request, or None for a notification."""
    if "id" not in message:
        return None
    method = message.get("method")
    params = message.get("params") or {}
    if method == "tools/call" and params.get("name") in ("echo", "nap"):
        text = params["arguments"]["text"]
        result: Any = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench-floor", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def write(out: list[bytes]) -> None:
    """All of `out` with one `write` (more if the pipe takes less)."""
    out.append(b"")
    data = memoryview(b"\n".join(out))
    while data:
        data = data[os.write(1, data) :]


class Naps:
    """The answers of the `nap` calls still sleeping, by deadline."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, bytes]] = []  # (deadline, arrival, answer)
        self.arrivals = 0

    def add(self, reply: bytes) -> None:
        self.arrivals += 1
        heapq.heappush(self.heap, (time.monotonic() + NAP, self.arrivals, reply))

    def due(self) -> list[bytes]:
        """The answers of the naps that are over, in order."""
        now, heap, out = time.monotonic(), self.heap, []
        while heap and heap[0][0] <= now:
            out.append(heapq.heappop(heap)[2])
        return out


def serve(lines: list[bytes], naps: Naps) -> list[bytes]:
    """The answers to the complete lines of one chunk that are due now (a nap's answer waits in `naps`)."""
    out = []
    for line in lines:
        if not line.strip():
            continue
        message = orjson.loads(line)
        reply = answer(message)
        if reply is None:
            continue
        if message.get("method") == "tools/call" and message["params"]["name"] == "nap":
            naps.add(orjson.dumps(reply))
        else:
            out.append(orjson.dumps(reply))
    return out


def main() -> None:
    """Serve until stdin ends (and the naps still running are over)."""
    pending, naps = b"", Naps()
    while True:
        if naps.heap:
            wait = max(0.0, naps.heap[0][0] - time.monotonic())
            if not select.select([0], [], [], wait)[0]:
                write(naps.due())
                continue
        chunk = os.read(0, 65536)
        if not chunk:
            break
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        if out := serve(lines, naps):
            write(out)
    while naps.heap:
        time.sleep(max(0.0, naps.heap[0][0] - time.monotonic()))
        write(naps.due())


if __name__ == "__main__":
    main()
