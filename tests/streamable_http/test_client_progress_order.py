"""Over Streamable HTTP, an SSE answer carrying progress events and then the result: by the time
``call_tool`` returns, every progress callback for those events has run, in order (session/outgoing.py:
Order), on the lean POST path and on httpx, with the events in one HTTP chunk or one chunk each."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcpframe.http import connect
from mcpframe.http.options import HttpClientOptions

from .test_client_lean import Scripted, chunked, handshake, head, result

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sse_with_progress(body: dict[str, Any], *, one_chunk: bool) -> bytes:
    """Progress 1..3 for the call's token, then its result, as SSE events of one POST answer."""
    token = body["params"]["_meta"]["progressToken"]
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": n},
        }
        for n in (1, 2, 3)
    ]
    messages.append(result(body["id"], {"content": [], "done": True}))
    events = [b"id: e-%d\ndata: %s\n\n" % (n, json.dumps(m).encode()) for n, m in enumerate(messages)]
    hdrs = {"content-type": "text/event-stream", "transfer-encoding": "chunked", "mcp-session-id": "s-1"}
    return head("200 OK", hdrs) + (chunked(b"".join(events)) if one_chunk else chunked(*events))


@pytest.mark.parametrize("one_chunk", [True, False], ids=["one-chunk", "chunk-each"])
@pytest.mark.parametrize("kind", ["plain", "yielding"])
@pytest.mark.parametrize("lean", [True, False], ids=["lean", "httpx"])
async def test_call_tool_returns_after_the_callbacks_of_the_progress_events_before_its_result(
    lean: bool, kind: str, one_chunk: bool
) -> None:
    seen: list[Any] = []

    def plain(progress: float, total: Any, message: Any) -> None:
        seen.append(progress)

    async def yielding(progress: float, total: Any, message: Any) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(progress)

    async def script(body: dict[str, Any], conn: int) -> bytes | None:
        if body.get("method") == "tools/call":
            return sse_with_progress(body, one_chunk=one_chunk)
        return await handshake(body)

    options = HttpClientOptions(lean=lean, get_stream=False, terminate_on_close=False)
    with anyio.fail_after(10):
        async with (
            Scripted(script) as server,
            connect(server.url, mode="legacy", http_options=options) as client,
        ):
            answer = await client.call_tool("work", {}, on_progress=plain if kind == "plain" else yielding)
            assert seen == [1, 2, 3]
            assert answer["done"] is True
