"""`proxy --listen` takes a batch POST only where the child negotiated 2025-03-26, as `serve --http` would:
elsewhere it is a 400 with one `-32600` "batches are not supported", and nothing reaches the child.

Found by an audit: the proxy answered a batch POST on a 2025-11-25 session with 200 and an array.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.proxy._listen_support import JSON_ONLY, Proxy, open_session, rpc

pytestmark = pytest.mark.anyio


async def open_2025_03_26(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    init: dict[str, Any] = {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    response = await http.post(url, json=rpc(0, "initialize", init), headers=JSON_ONLY)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == "2025-03-26"
    headers = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-03-26"}
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=done, headers={**JSON_ONLY, **headers})).status_code == 202
    return headers


async def test_a_batch_post_on_a_2025_11_25_session_is_a_400(proxy: Proxy, http: httpx.AsyncClient) -> None:
    headers = {**JSON_ONLY, **await open_session(http, proxy.url)}
    refused = await http.post(proxy.url, json=[rpc(1, "echo"), rpc(2, "echo")], headers=headers)
    assert refused.status_code == 400
    assert refused.json()["id"] is None
    assert refused.json()["error"] == {
        "code": -32600,
        "message": "Invalid Request: batches are not supported",
    }
    again = await http.post(proxy.url, json=rpc(3, "echo", {"x": 1}), headers=headers)
    assert again.json()["result"]["params"] == {"x": 1}  # the session goes on


async def test_a_batch_post_on_a_2025_03_26_session_is_one_array(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = {**JSON_ONLY, **await open_2025_03_26(http, proxy.url)}
    answers = (await http.post(proxy.url, json=[rpc(1, "echo"), rpc(2, "echo")], headers=headers)).json()
    assert sorted(a["id"] for a in answers) == [1, 2]
