"""The listening proxy keeps nothing but responses for a JSON-only client's POST in a session: the
notifications it can never receive (progress here) are dropped, not held until its answer."""

from __future__ import annotations

import httpx
import pytest
from tests.proxy._listen_support import BOTH, JSON_ONLY, in_process_proxy
from tests.proxy.conftest import PEER

from mcpframe.http.options import HttpOptions
from mcpframe.http.streams import Stream

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("accept", ["json", "both"])
async def test_a_json_only_post_keeps_only_its_answer(accept: str, monkeypatch: pytest.MonkeyPatch) -> None:
    kept: list[int] = []
    real = Stream.response_frames

    def response_frames(self: Stream) -> list[bytes]:
        kept.append(len(self._backlog))  # what the stream held when its JSON answer was made
        return real(self)

    monkeypatch.setattr(Stream, "response_frames", response_frames)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    options = HttpOptions(response_mode="auto", stream_after=60.0)
    async with in_process_proxy(PEER, http=options) as proxy, httpx.AsyncClient(timeout=20) as http:
        first = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
        response = await http.post(proxy.url, json=first, headers=JSON_ONLY)
        headers = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(proxy.url, json=done, headers={**JSON_ONLY, **headers})).status_code == 202
        kept.clear()
        # a progress token: the full path (`ListenPosts._in_session`), the peer sends two progress first
        ask = {"jsonrpc": "2.0", "id": 5, "method": "progress", "params": {"_meta": {"progressToken": "t"}}}
        sent = {**(JSON_ONLY if accept == "json" else BOTH), **headers}
        answer = await http.post(proxy.url, json=ask, headers=sent)
    assert answer.status_code == 200
    if accept == "json":
        assert answer.json()["result"] == {"token_seen": "t"}
        assert kept == [1]  # the answer alone: no progress was kept for a client that cannot take it
    else:  # a client that takes SSE gets the progress too (on SSE, as before)
        assert answer.headers["content-type"] == "text/event-stream"
        assert answer.text.count("notifications/progress") == 2
