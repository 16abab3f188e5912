"""Helpers for the lean server's SSE tests (`test_sse_wire_hold.py`, `test_sse_handover.py`,
`test_sse_hold_edges.py`): `_live_support`'s gated tools plus one that answers in its first step and one
that logs before it waits, and a session opened on them for a response mode (`in_mode`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from mcpframe.http.server import StreamableHTTPServer
from mcpframe.server import Context

from ._live_support import GatedTools, serving


class Tools(GatedTools):
    """`GatedTools` (`echo` on the worker pool, `hold` on the gate) with `aecho`, an `async def` tool that
    answers in its first step, and `note`, which suspends, logs, then waits for the gate."""

    def __init__(self) -> None:
        super().__init__("sse-hold")
        tools = self

        @self.server.tool
        async def aecho(text: str) -> str:
            """Answers in its first step (nothing to wait for)."""
            return text

        @self.server.tool
        async def note(ctx: Context) -> str:
            """Suspends, logs, then waits for the gate."""
            await anyio.sleep(0)
            await ctx.info("before")
            await tools.gate.wait()
            return "noted"


def mode_options(mode: str) -> dict[str, Any]:
    """The options of a response mode these tests run in: `"sse"` with no event store (nothing to resume,
    no priming event), `"resumable"` with the default memory store."""
    return {"response_mode": mode, "event_store": None} if mode == "sse" else {"response_mode": mode}


@contextlib.asynccontextmanager
async def in_mode(
    tools: Tools, mode: str, **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTPServer, httpx.AsyncClient, dict[str, str]]]:
    """`_live_support.serving` on the lean server in response mode `mode` (`mode_options`); yields (URL, the
    app, a client, the headers of a request in the session)."""
    async with serving(tools, **mode_options(mode), **options) as served:
        yield served
