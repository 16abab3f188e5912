"""Tasks over Streamable HTTP (a real uvicorn in this loop): both eras, with a task that elicits.

A 2025-11-25 task's elicitation goes out on the session's standing stream (the GET), which the client keeps
open; a 2026-07-28 task's goes into ``inputRequests`` and comes back by ``tasks/update``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("httpx")

from tests.server.test_tasks import make_server, text
from tests.streamable_http._server_support import live_server

from mcpframe.http import connect

pytestmark = pytest.mark.anyio


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "http"}}


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_tasks_over_streamable_http(mode: Any) -> None:
    server, _ = make_server()
    with anyio.fail_after(20):
        async with (
            live_server(server) as (url, _),
            connect(url, mode=mode, elicitation_handler=elicit) as client,
        ):
            assert client.era == mode
            handle = await client.call_tool("double", {"x": 4}, task=True)
            assert handle.task_id is not None
            assert text(await handle.result()) == "8"
            asking = await client.call_tool("ask", task=True)
            assert text(await asking.result()) == "hello http"
