"""The remote proxy's fast lane (`http/client_fast.py`) against `serve --http examples/everything.py`:
plain calls take it, progress and server requests come through it in order, and whatever it does not read
(an HTTP error, an expired session, a cancelled request) ends as the transport's full path ends it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import SERVE_EVERYTHING, running
from tests.proxy._remote_support import Stdio

from mcpframe.http.client_fast import FastLane
from mcpframe.proxy.remote import MAX_IN_FLIGHT, fast_lane, proxy_remote, remote_transport

pytestmark = pytest.mark.anyio

TOKEN = "lane-s3cret"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with running([*SERVE_EVERYTHING, "--http", "--port", "0"], MCPFRAME_AUTH_TOKEN=TOKEN) as url:
        yield url


@pytest.fixture(scope="module")
def json_url() -> Iterator[str]:
    """The same server answering plain JSON where no handler streams (`--response-mode auto`)."""
    command = [*SERVE_EVERYTHING, "--http", "--port", "0", "--response-mode", "auto"]
    with running(command, MCPFRAME_AUTH_TOKEN=TOKEN) as url:
        yield url


@asynccontextmanager
async def proxied_with(
    url: str, *, lane_on: bool = True, max_in_flight: int = MAX_IN_FLIGHT
) -> AsyncIterator[tuple[Stdio, Any, FastLane | None]]:
    """An in-process `mcpframe proxy URL` (with its lane unless not `lane_on`), the handshake done
    (2025-11-25)."""
    stdio = Stdio()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with remote_transport(url, headers) as remote, anyio.create_task_group() as tg:
        lane = fast_lane(remote) if lane_on else None
        assert lane is None or isinstance(lane, FastLane)
        tg.start_soon(lambda: proxy_remote(stdio, remote, lane=lane, max_in_flight=max_in_flight))
        assert "result" in await stdio.handshake({"sampling": {}, "elicitation": {}})
        yield stdio, remote, lane
        stdio.input.close()


@asynccontextmanager
async def proxied(url: str) -> AsyncIterator[tuple[Stdio, Any, FastLane]]:
    """`proxied_with` its lane."""
    async with proxied_with(url) as (stdio, remote, lane):
        assert lane is not None
        yield stdio, remote, lane


def call(rid: Any, tool: str, arguments: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def text(answer: dict[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


async def test_plain_calls_take_the_lane_and_progress_comes_before_its_answer(server_url: str) -> None:
    with anyio.fail_after(30):
        async with proxied(server_url) as (stdio, _, lane):
            await stdio.write(call(1, "test_simple_text"))
            await stdio.write(call(2, "test_tool_with_progress", progressToken="p"))
            await stdio.write(call(3, "test_simple_text"))
            await stdio.write(call(4, "test_tool_with_logging"))
            assert text(await stdio.answer(2)) == "Progress test completed"
            assert text(await stdio.answer(1)).startswith("This is a simple text")
            assert text(await stdio.answer(3)).startswith("This is a simple text")
            assert text(await stdio.answer(4)) == "Logging test completed"
            assert (lane.posted, lane.handed_over) == (4, 0)
    progress = [i for i, m in enumerate(stdio.out) if m.get("method") == "notifications/progress"]
    assert [stdio.out[i]["params"]["progress"] for i in progress] == [0, 50, 100]
    (answer,) = [i for i, m in enumerate(stdio.out) if m.get("id") == 2]
    assert answer > max(progress)  # the answer after every progress notification of its request
    logged = [m["params"]["data"] for m in stdio.out if m.get("method") == "notifications/message"]
    assert logged == ["Tool execution started", "Tool processing data", "Tool execution completed"]


async def test_server_requests_on_a_lane_answer_reach_the_client(server_url: str) -> None:
    with anyio.fail_after(30):
        async with proxied(server_url) as (stdio, _, lane):
            await stdio.write(call(5, "test_sampling", {"prompt": "hi"}))
            asked = await stdio.request_from_server("sampling/createMessage")
            reply = {"role": "assistant", "content": {"type": "text", "text": "echo"}, "model": "m"}
            await stdio.write({"jsonrpc": "2.0", "id": asked["id"], "result": reply})
            assert text(await stdio.answer(5)) == "LLM response: echo"
            assert lane.posted == 1


async def test_an_http_error_is_read_by_the_transport_and_named(server_url: str) -> None:
    with anyio.fail_after(30):
        async with proxied(server_url) as (stdio, remote, lane):
            remote.streamable.headers["Authorization"] = "Bearer wrong"  # the prebuilt heads follow it
            await stdio.write(call(6, "test_simple_text"))
            answer = await stdio.answer(6)
            assert "HTTP 401" in answer["error"]["message"]
            assert (lane.posted, lane.handed_over) == (1, 1)
            remote.streamable.headers["Authorization"] = f"Bearer {TOKEN}"
            await stdio.write(call(7, "test_simple_text"))
            assert text(await stdio.answer(7)).startswith("This is a simple text")


async def test_an_expired_session_is_started_again_and_the_call_answered(server_url: str) -> None:
    with anyio.fail_after(30):
        async with proxied(server_url) as (stdio, remote, lane):
            stale = remote.streamable.session_id
            headers = {"Authorization": f"Bearer {TOKEN}", "mcp-session-id": stale}
            async with httpx.AsyncClient() as http:  # the server forgets the session
                assert (await http.delete(server_url, headers=headers)).status_code < 300
            await stdio.write(call(8, "test_simple_text"))
            assert text(await stdio.answer(8)).startswith("This is a simple text")
            assert lane.handed_over == 1
            assert remote.streamable.session_id not in (None, stale)
            await stdio.write(call(9, "test_simple_text"))  # the lane again, in the new session
            assert text(await stdio.answer(9)).startswith("This is a simple text")
            assert (lane.posted, lane.handed_over) == (2, 1)


async def test_a_cancelled_lane_request_is_abandoned_and_gets_no_answer(server_url: str) -> None:
    with anyio.fail_after(30):
        async with proxied(server_url) as (stdio, _, lane):
            await stdio.write(call(10, "test_elicitation", {"message": "who?"}))
            await stdio.request_from_server("elicitation/create")  # the tool now waits for the client
            cancel = {"requestId": 10, "reason": "changed my mind"}
            await stdio.write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
            await stdio.write(call(11, "test_simple_text"))
            assert text(await stdio.answer(11)).startswith("This is a simple text")
            assert not lane._busy  # the cancelled request's connection was closed, nothing waits on it
    assert not [m for m in stdio.out if m.get("id") == 10 and "method" not in m]


async def test_json_answers_take_the_lane_too(json_url: str) -> None:
    with anyio.fail_after(30):
        async with proxied(json_url) as (stdio, _, lane):
            await stdio.write(call(12, "test_simple_text"))
            await stdio.write(call(13, "test_tool_with_progress", progressToken=7))
            await stdio.write(
                {"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": "nope"}}
            )
            assert text(await stdio.answer(12)).startswith("This is a simple text")
            assert text(await stdio.answer(13)) == "Progress test completed"
            assert "nope" in (await stdio.answer(14))["error"]["message"]  # the server's own error answer
            assert (lane.posted, lane.handed_over) == (3, 0)
    assert [
        m["params"]["progressToken"] for m in stdio.out if m.get("method") == "notifications/progress"
    ] == [7] * 3


@pytest.mark.parametrize("lane_on", [True, False], ids=["lane", "full-path"])
async def test_answers_to_the_server_pass_requests_waiting_for_the_bound(
    server_url: str, lane_on: bool
) -> None:
    """Two tools in flight (the bound) wait on elicitation answers that the client wrote behind a third
    call: stdin is read on past the waiting call, so the answers reach the server and all three finish."""
    with anyio.fail_after(30):
        async with proxied_with(server_url, lane_on=lane_on, max_in_flight=2) as (stdio, _, _):
            for rid in (20, 21, 22):
                await stdio.write(call(rid, "test_elicitation", {"message": f"m{rid}"}))
            asked = await stdio.requests_from_server("elicitation/create", 2)
            for ask in asked:  # written after call 22, which waits for room
                content = {"username": ask["params"]["message"], "email": "e@x"}
                reply = {"action": "accept", "content": content}
                await stdio.write({"jsonrpc": "2.0", "id": ask["id"], "result": reply})
            (*_, third) = await stdio.requests_from_server("elicitation/create", 3)
            reply = {"action": "accept", "content": {"username": "m22", "email": "e@x"}}
            await stdio.write({"jsonrpc": "2.0", "id": third["id"], "result": reply})
            for rid in (20, 21, 22):
                assert f"'username': 'm{rid}'" in text(await stdio.answer(rid))
    assert sorted(m["params"]["message"] for m in asked) == ["m20", "m21"]  # 22 waited for room
