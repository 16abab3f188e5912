"""The direct path of a POST (`PostHandler._direct`, `session.inline`): one request on a running lane is
answered without going through its Session's reader, with the same answers, ordering and cancellation."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import fast, handling

from ._server_support import answer, asgi_client, call, initialize, live_server, messages, session_headers
from .test_server_live import start_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ids of the requests that took the direct path (the ASGI app's, or the lean server's fast path)."""
    taken: list[Any] = []
    real = handling.start_inline
    assert fast.start_inline is real  # one function, imported by both paths

    def counted(session: Any, message: Any, deliver: Any) -> Any:
        taken.append(message.id)
        return real(session, message, deliver)

    monkeypatch.setattr(handling, "start_inline", counted)
    monkeypatch.setattr(fast, "start_inline", counted)
    return taken


async def test_sequential_calls_take_the_direct_path_and_answer_as_before(direct: list[Any]) -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client))
        assert direct == []  # initialize went the full way: its lane now runs for the calls
        for rid in (2, 3, 4):
            response = await client.post(
                "/mcp", json=call("echo", {"text": f"t{rid}"}, rid=rid), headers=headers
            )
            assert response.headers["content-type"] == "application/json"
            assert response.json() == {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"content": [{"type": "text", "text": f"t{rid}"}]},
            }
        assert direct == [2, 3, 4]


async def test_a_handler_that_logs_switches_to_sse_with_the_log_before_the_answer(direct: list[Any]) -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client))
        response = await client.post("/mcp", json=call("chatty", rid=5), headers=headers)
        assert direct == [5]
        assert response.headers["content-type"].startswith("text/event-stream")
        got = messages(response.text)
        assert [m.get("method") for m in got] == ["notifications/message", None]
        assert got[0]["params"]["data"] == "halfway"
        assert got[1]["id"] == 5
        assert got[1]["result"]["content"][0]["text"] == "done"


async def test_a_progress_token_takes_the_full_path(direct: list[Any]) -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client))
        response = await client.post("/mcp", json=call("chatty", rid=6, progressToken="p"), headers=headers)
        assert direct == []
        got = messages(response.text)
        assert [m.get("method") for m in got] == [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
            None,
        ]
        assert answer(response)["result"]["content"][0]["text"] == "done"


async def test_an_invalid_call_on_the_direct_path_is_answered_with_its_error(direct: list[Any]) -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client))
        body = {"jsonrpc": "2.0", "id": 8, "method": "no/such"}
        response = await client.post("/mcp", json=body, headers=headers)
        assert direct == [8]
        assert response.json()["error"]["code"] == -32601
        assert response.json()["id"] == 8


async def test_sampling_from_a_direct_call_goes_out_on_its_stream_and_comes_back(direct: list[Any]) -> None:
    async with live_server() as (url, _), httpx.AsyncClient() as client:
        headers = await start_session(client, url)
        text = None
        with anyio.fail_after(10):
            async with client.stream(
                "POST", url, json=call("ask", {"prompt": "hi"}, rid=9), headers=headers
            ) as r:
                async for line in r.aiter_lines():
                    if not line.startswith("data: ") or line == "data: ":
                        continue
                    event = json.loads(line.removeprefix("data: "))
                    if event.get("method") == "sampling/createMessage":
                        result = {
                            "role": "assistant",
                            "content": {"type": "text", "text": "HI"},
                            "model": "m",
                        }
                        reply = {"jsonrpc": "2.0", "id": event["id"], "result": result}
                        assert (await client.post(url, json=reply, headers=headers)).status_code == 202
                    elif event.get("id") == 9:
                        text = event["result"]["content"][0]["text"]
        assert direct == [9]
        assert text == "HI"


@pytest.mark.parametrize("mode", ["auto", "resumable"])
async def test_a_direct_answer_leaves_no_stream_behind(direct: list[Any], mode: str) -> None:
    async with asgi_client(response_mode=mode) as (client, http):
        headers = session_headers(await initialize(client))
        session = next(iter(http.sessions.sessions.values()))
        for rid in (2, 3):
            response = await client.post("/mcp", json=call("echo", {"text": "x"}, rid=rid), headers=headers)
            assert answer(response)["result"]["content"][0]["text"] == "x"
        assert direct == [2, 3]
        assert [s for s in session.streams.values() if s is not session.get_stream] == []
