"""`proxy --listen`: a DELETE of the session while a call is in flight at its child, the answer still
awaited as JSON, gives the request a JSON-RPC error (-32000, "the HTTP session ended before the upstream
server answered request 9...") instead of a bare 202 or an empty SSE stream, as `serve --http` does
(tests/streamable_http/test_s34_delete_in_flight.py): on the lean server's fast path (which the bridge's
end answered already) and on uvicorn's full path (which the host's end of the session woke first)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import BOTH, JSON_ONLY, in_process_proxy, open_session, rpc

from mcpframe import jsonrpc
from mcpframe.http.options import HttpOptions
from mcpframe.proxy.listen_bridge import SESSION_ENDED, SessionBridge

pytestmark = pytest.mark.anyio

PEER = [sys.executable, str(Path(__file__).with_name("peer.py"))]


@pytest.mark.parametrize("host", ["mcpframe", "uvicorn"])
@pytest.mark.parametrize("accept", [JSON_ONLY, BOTH], ids=["json-only", "both"])
async def test_a_call_in_flight_when_its_session_is_deleted_gets_an_error(
    host: str, accept: dict[str, str]
) -> None:
    http = HttpOptions(response_mode="auto", stream_after=60.0)
    async with (
        in_process_proxy(PEER, http=http, http_server=host) as proxy,
        httpx.AsyncClient(timeout=30) as client,
    ):
        headers = await open_session(client, proxy.url)
        (session,) = proxy.app.sessions.sessions.values()
        bridge = session.connection
        assert isinstance(bridge, SessionBridge)
        found: list[httpx.Response] = []

        async def post() -> None:
            found.append(await client.post(proxy.url, json=rpc(9, "slow"), headers={**accept, **headers}))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(post)
                while 9 not in bridge.pending and not found:  # written to the child
                    await anyio.sleep(0.005)
                assert (await client.delete(proxy.url, headers=headers)).status_code == 200
        (response,) = found
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")
        text = f"{SESSION_ENDED} request 9; initialize a new session"  # as the bridge's own end gives it
        error: dict[str, Any] = {"code": jsonrpc.CONNECTION_CLOSED, "message": text}
        assert response.json() == {"jsonrpc": "2.0", "id": 9, "error": error}
