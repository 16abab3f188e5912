"""The listening proxy's upstream children, in process (their pool and sessions are looked at directly):
the pool bound, a child killed mid-call, DELETE ending the child, and bearer tokens in front of it all."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.abc
import httpx
import mcp.types as sdk
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests.proxy._listen_support import EVERYTHING, SERVE_EVERYTHING, Proxy, in_process_proxy

from mcpframe.cli.token_auth import static_token_auth
from mcpframe.http.options import HttpOptions
from mcpframe.proxy import pool as pool_module
from mcpframe.proxy.listen import ListenServer
from mcpframe.proxy.listen_bridge import SessionBridge
from mcpframe.proxy.pool import ChildPool, PoolBusy

pytestmark = pytest.mark.anyio


async def _until(condition: Callable[[], bool]) -> None:
    """Wait (bounded by the caller's `fail_after`) for a condition the proxy's tasks make true."""
    while not condition():
        await anyio.sleep(0.01)


@pytest.fixture
async def proxy(request: pytest.FixtureRequest) -> AsyncIterator[Proxy]:
    extra: dict[str, Any] = dict(getattr(request, "param", {}))
    token = extra.pop("token", None)
    http = HttpOptions(auth=static_token_auth(token, "http://127.0.0.1/mcp") if token else None)
    async with in_process_proxy(SERVE_EVERYTHING, pool_size=extra.get("pool_size", 4), http=http) as proxy:
        yield proxy


def bridges(app: ListenServer) -> list[SessionBridge]:
    return [s.connection for s in app.sessions.sessions.values()]  # type: ignore[misc]


@pytest.mark.parametrize("proxy", [{"pool_size": 1}], indirect=True)
async def test_with_pool_size_1_a_second_session_waits_for_the_first_to_end(proxy: Proxy) -> None:
    second_done = anyio.Event()

    async def second() -> None:
        async with streamable_http_client(proxy.url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            second_done.set()

    with anyio.fail_after(30):
        async with streamable_http_client(proxy.url) as (read, write), ClientSession(read, write) as first:
            await first.initialize()
            assert proxy.app.pool.running == 1
            async with anyio.create_task_group() as tg:
                tg.start_soon(second)
                await _until(lambda: proxy.app.pool.waiting == 1)
                assert not second_done.is_set()
                await first.send_ping()  # the first session still works while the second waits
                await _end_session(proxy)  # DELETE ends its child: the second gets the place
                await second_done.wait()
    assert proxy.app.pool.spawned == 2


async def _end_session(proxy: Proxy) -> None:
    """DELETE the one open session, as a client leaving does."""
    (session,) = list(proxy.app.sessions.sessions.values())
    async with httpx.AsyncClient() as http:
        response = await http.delete(proxy.url, headers={"mcp-session-id": session.id})
    assert response.status_code == 200


async def test_a_child_killed_mid_call_fails_the_call_and_the_session_ends(proxy: Proxy) -> None:
    asked = anyio.Event()
    release = anyio.Event()

    async def sample(context: Any, params: Any) -> sdk.CreateMessageResult:
        asked.set()
        await release.wait()
        return sdk.CreateMessageResult(
            role="assistant", content=sdk.TextContent(type="text", text="x"), model="m"
        )

    with anyio.fail_after(30):
        async with (
            streamable_http_client(proxy.url) as (read, write),
            ClientSession(read, write, sampling_callback=sample) as session,
        ):
            await session.initialize()
            (bridge,) = bridges(proxy.app)
            assert bridge.child is not None
            async with anyio.create_task_group() as tg:

                async def kill() -> None:
                    await asked.wait()  # the call is in flight, waiting for the client's sample
                    assert bridge.child is not None
                    bridge.child.process.kill()

                tg.start_soon(kill)
                with pytest.raises(Exception, match="upstream server exited"):
                    await session.call_tool("test_sampling", {"prompt": "hi"})
                release.set()
            await _until(lambda: not proxy.app.sessions.sessions)  # the session ended with its child
            assert proxy.app.pool.running == 0


async def test_delete_ends_the_sessions_child(proxy: Proxy) -> None:
    with anyio.fail_after(30):
        async with streamable_http_client(proxy.url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            (bridge,) = bridges(proxy.app)
            child = bridge.child
            assert child is not None
            assert child.returncode is None
        # The SDK client's DELETE on the way out ends the session, whose task then closes the child: waited
        # for until its place is free (`Child.close` frees it last), not until it has an exit status, which
        # asyncio sets a few loop turns before the close that awaits the exit goes on to free the place.
        await _until(lambda: proxy.app.pool.running == 0)
    assert child.returncode is not None


@pytest.mark.parametrize("proxy", [{"token": "s3cret"}], indirect=True)
async def test_a_bearer_token_is_required_when_configured(proxy: Proxy) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as http:
        refused = await http.post(proxy.url, json=body, headers=headers)
        wrong = await http.post(proxy.url, json=body, headers={**headers, "authorization": "Bearer nope"})
    assert refused.status_code == 401
    assert wrong.status_code == 401
    assert "bearer" in refused.headers["www-authenticate"].lower()
    assert proxy.app.pool.spawned == 0  # refused before any child was started
    async with httpx.AsyncClient() as http:
        allowed = await http.post(proxy.url, json=body, headers={**headers, "authorization": "Bearer s3cret"})
    assert allowed.status_code != 401
    assert proxy.app.pool.spawned == 1


async def test_a_pool_wait_past_its_bound_is_refused() -> None:
    pool = ChildPool([sys.executable, "-c", "import sys; sys.stdin.read()"], size=1, wait_timeout=0.05)
    child = await pool.spawn()
    try:
        with pytest.raises(PoolBusy, match="stayed busy"):
            await pool.spawn()
        assert pool.waiting == 0
    finally:
        await child.close()
    assert pool.running == 0


async def test_a_child_whose_stdout_cannot_be_read_is_killed_and_reaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[anyio.abc.Process] = []
    open_process = anyio.open_process

    async def recorded(*args: Any, **kwargs: Any) -> anyio.abc.Process:
        started.append(await open_process(*args, **kwargs))
        return started[-1]

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise OSError("no pipe for you")

    monkeypatch.setattr(anyio, "open_process", recorded)
    monkeypatch.setattr(pool_module, "PipeReader", refused)  # the reader of its stdout
    pool = ChildPool([sys.executable, "-c", "import sys; sys.stdin.read()"], size=1)
    with anyio.fail_after(10), pytest.raises(OSError, match="no pipe"):
        await pool.spawn()
    assert started[0].returncode is not None  # waited for: no zombie
    assert pool.running == 0  # its place is free again


_MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


async def test_stateless_requests_with_the_same_id_share_one_child_and_get_their_own_answers(
    proxy: Proxy,
) -> None:
    async def call(http: httpx.AsyncClient, tool: str) -> Any:
        params = {"name": tool, "arguments": {}, "_meta": _MODERN_META}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        headers = {
            "accept": "application/json",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": tool,
        }
        response = await http.post(proxy.url, json=body, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()

    answers: dict[str, Any] = {}

    async def run(http: httpx.AsyncClient, tool: str) -> None:
        answers[tool] = await call(http, tool)

    with anyio.fail_after(30):
        async with httpx.AsyncClient(timeout=20) as http, anyio.create_task_group() as tg:
            tg.start_soon(run, http, "test_tool_with_logging")
            tg.start_soon(run, http, "test_simple_text")
    assert {answer["id"] for answer in answers.values()} == {1}
    assert answers["test_simple_text"]["result"]["content"][0]["text"].startswith("This is a simple text")
    assert answers["test_tool_with_logging"]["result"]["content"][0]["text"] == "Logging test completed"
    assert proxy.app.pool.spawned == 1  # one shared child for both


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
_HEADERS = {"accept": "application/json, text/event-stream"}


async def test_a_server_that_cannot_start_is_a_502_and_a_refused_initialize_leaves_no_session(
    proxy: Proxy,
) -> None:
    async with in_process_proxy(["/nonexistent/mcp-server"]) as broken, httpx.AsyncClient() as http:
        response = await http.post(broken.url, json=_INITIALIZE, headers=_HEADERS)
        assert response.status_code == 502
        assert "could not start" in response.json()["error"]["message"]
        assert broken.app.pool.running == 0
    refused = {**_INITIALIZE, "params": []}  # the child answers an error: no session is kept
    async with httpx.AsyncClient() as http:
        response = await http.post(proxy.url, json=refused, headers=_HEADERS)
    assert "error" in response.json()
    assert "mcp-session-id" not in response.headers
    with anyio.fail_after(10):
        await _until(lambda: proxy.app.pool.running == 0)  # and its child ended


async def test_a_slow_starting_child_still_answers_initialize_as_json_and_a_refusal_keeps_no_session() -> (
    None
):
    # The child takes 0.3 s to start and the proxy switches to SSE after 0.01 s of silence: an initialize
    # still waits for its answer as JSON, so the session id is given (or not) by what the child answered.
    start = "import runpy, sys, time; time.sleep(0.3); sys.argv[0] = 'mcpframe'; "
    start += "runpy.run_module('mcpframe', run_name='__main__', alter_sys=True)"
    slow = [sys.executable, "-c", start, "serve", str(EVERYTHING)]
    async with (
        in_process_proxy(slow, http=HttpOptions(stream_after=0.01)) as proxy,
        httpx.AsyncClient() as http,
    ):
        with anyio.fail_after(30):
            refused = await http.post(proxy.url, json={**_INITIALIZE, "params": []}, headers=_HEADERS)
            assert refused.headers["content-type"].startswith("application/json")
            assert "error" in refused.json()
            assert "mcp-session-id" not in refused.headers
            accepted = await http.post(proxy.url, json=_INITIALIZE, headers=_HEADERS)
            assert accepted.headers["content-type"].startswith("application/json")
            assert accepted.json()["result"]["serverInfo"]
            assert accepted.headers["mcp-session-id"]
