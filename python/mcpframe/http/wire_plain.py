"""The lean HTTP server's native read of plain requests (`core.plain_request`), where httptools stands
between two requests of a kept-alive connection: one call per request, where httptools makes a Python call
per URL, header and body part. What is not plain (HTTP/1.0, chunked bodies, `Expect`, `Connection: close`,
a head or body split over reads, what is refused) is left to httptools, from the same byte on."""

from __future__ import annotations

import asyncio
from collections import deque

from mcpframe import core

from .wire_parts import Cycle

__all__ = ["MAX_PIPELINED", "PLAIN", "queue_plain"]

MAX_PIPELINED = 8  # requests parsed ahead of the one being answered before reading stops
# the native backend reads a plain request in one call; the python one's `plain_request` (the contract's
# reference) is slower than httptools, so there httptools reads every request
PLAIN = core.plain_request if core.BACKEND == "native" else None


def queue_plain(data: bytes, pending: deque[Cycle], transport: asyncio.Transport | None) -> bytes:
    """Queue on `pending` the plain requests at the start of `data`; the rest of `data` is httptools'.
    Reading stops (`transport.pause_reading`) once more than `MAX_PIPELINED` wait, as httptools' reads do."""
    assert PLAIN is not None
    start = 0
    while start < len(data) and (request := PLAIN(data, start)) is not None:
        method, target, headers, body, start = request
        cycle = Cycle(method, target, "1.1", headers, True)
        cycle.complete = True
        if body:
            cycle.body.append(body)
        pending.append(cycle)
        if len(pending) > MAX_PIPELINED and transport is not None:
            transport.pause_reading()
    return data[start:] if start else data
