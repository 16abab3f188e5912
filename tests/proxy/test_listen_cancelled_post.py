"""`mcpframe proxy --listen`: a POST carrying a request the client then cancels (`notifications/cancelled`)
ends as an SSE stream with nothing in it, never with 202, which the transport keeps for a POST of
notifications and responses only (2025-11-25 transports: a POST with a request MUST get `text/event-stream`
or `application/json`; cancellation: no response SHOULD be sent). On both HTTP servers: the lean one's fast
path (`listen_fast`) and uvicorn's full path (`listen_posts`). A JSON-only client still gets 202 (there is no
JSON object to give it; see `mcpframe.http.responses.no_answer`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from tests.proxy._listen_support import BOTH, JSON_ONLY, child_env, open_session, rpc, serving_listen

from mcpframe.http.options import HttpOptions
from mcpframe.proxy import ProxyOptions

pytestmark = pytest.mark.anyio

CHILD = """
import json, sys
record = open(sys.argv[1], "a", buffering=1)
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "child", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    elif message.get("method") == "tools/call":
        record.write("started %s\\n" % json.dumps(message["id"]))  # and never answers
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def listening(http_server: str, record: Path) -> AsyncIterator[str]:
    """The proxy in front of `CHILD` (JSON answers awaited up to 60 s), served by `http_server`; its URL."""
    options = ProxyOptions(
        listen="http://127.0.0.1:0/mcp",
        command=[sys.executable, "-c", CHILD, str(record)],
        env=child_env(),
        http=HttpOptions(response_mode="auto", stream_after=60.0),
    )
    async with serving_listen(options, http_server) as url:
        yield url


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
@pytest.mark.parametrize("accept", ["both", "json only"])
async def test_a_cancelled_call_ends_its_post_as_an_empty_sse_stream(
    http_server: str, accept: str, tmp_path: Path
) -> None:
    record = tmp_path / "record"
    media = BOTH if accept == "both" else JSON_ONLY
    got: list[httpx.Response] = []
    with anyio.fail_after(20):
        async with listening(http_server, record) as url, httpx.AsyncClient(timeout=30) as http:
            headers = {**media, **await open_session(http, url)}

            async def call() -> None:
                tool = {"name": "slow", "arguments": {}}
                got.append(await http.post(url, json=rpc(9, "tools/call", tool), headers=headers))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                while not (record.exists() and record.read_text() == "started 9\n"):  # the child has it
                    await anyio.sleep(0.01)
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
                assert (await http.post(url, json=cancel, headers=headers)).status_code == 202
    response = got[0]
    if accept == "both":
        assert (response.status_code, response.content) == (200, b"")
        assert response.headers["content-type"] == "text/event-stream"
    else:
        assert (response.status_code, response.content) == (202, b"")
    assert response.headers["mcp-session-id"] == headers["mcp-session-id"]
