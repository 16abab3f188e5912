"""Helpers of the `--multiplex shared` tests: the proxy in this process, sessions, SSE read as messages."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
import httpx
from tests.proxy._listen_support import BOTH, JSON_ONLY, in_process_proxy, rpc

OnMessage = Callable[[dict[str, Any]], Awaitable[None]]


def shared_proxy(command: Sequence[str], *, on_upstream_exit: Any = "restart") -> Any:
    """`mcpframe proxy --listen --multiplex shared` in front of `command`, in this process."""
    return in_process_proxy(command, multiplex="shared", on_upstream_exit=on_upstream_exit)


async def initialize(
    http: httpx.AsyncClient, url: str, version: str = "2025-11-25"
) -> tuple[dict[str, str], Any]:
    """A session through the proxy (JSON-only initialize asking `version`): its headers and the answer."""
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
    response = await http.post(url, json=body, headers=JSON_ONLY)
    assert response.status_code == 200, response.text
    answer = response.json()
    headers = {
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": answer["result"]["protocolVersion"],
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=done, headers={**JSON_ONLY, **headers})).status_code == 202
    return headers, answer


async def call(http: httpx.AsyncClient, url: str, headers: dict[str, str], body: Any) -> Any:
    """A POST answered as JSON (its body decoded)."""
    response = await http.post(url, json=body, headers={**JSON_ONLY, **headers})
    assert response.status_code == 200, response.text
    return response.json()


async def sse_post(
    http: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
    body: Any,
    on_message: OnMessage | None = None,
) -> list[dict[str, Any]]:
    """A POST whose client takes SSE: every message of its answer, in order (`on_message` sees each)."""
    messages: list[dict[str, Any]] = []
    async with http.stream("POST", url, json=body, headers={**BOTH, **headers}) as response:
        assert response.status_code == 200, await response.aread()
        if response.headers["content-type"].startswith("application/json"):
            messages.append(json.loads(await response.aread()))
            return messages
        async for line in response.aiter_lines():
            if line.startswith("data:") and line[5:].strip():
                message = json.loads(line[5:])
                messages.append(message)
                if on_message is not None:
                    await on_message(message)
    return messages


@contextlib.asynccontextmanager
async def get_stream(
    http: httpx.AsyncClient, url: str, headers: dict[str, str]
) -> AsyncIterator[anyio.abc.ObjectReceiveStream[dict[str, Any]]]:
    """The session's GET stream, open: its messages as they come."""
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](100)
    opened = anyio.Event()

    async def read() -> None:
        accept = {"accept": "text/event-stream", **headers}
        async with http.stream("GET", url, headers=accept) as response:
            assert response.status_code == 200
            opened.set()
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    await send.send(json.loads(line[5:]))

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        with anyio.fail_after(10):
            await opened.wait()
        yield receive
        tg.cancel_scope.cancel()


async def until(condition: Callable[[], bool]) -> None:
    """Wait (a loop turn at a time, bounded by the test's `fail_after`) until `condition()` holds."""
    while not condition():
        await anyio.sleep(0.005)


@contextlib.asynccontextmanager
async def slow_in_flight(
    http: httpx.AsyncClient, proxy: Any, headers: dict[str, str], rid: int, *, sse: bool = True
) -> AsyncIterator[tuple[int, list[Any]]]:
    """A `slow` call (never answered by the peer) of the session of `headers` in flight: the id the child
    got for it, and the list its POST's answer lands in once it ends (as SSE messages, or JSON)."""
    answered: list[Any] = []
    shared = proxy.app.shared
    before = len(shared.ids)

    async def slow() -> None:
        post = sse_post if sse else call
        answered.append(await post(http, proxy.url, headers, rpc(rid, "slow")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        await until(lambda: len(shared.ids) > before)
        conn = next(c for c, b in shared.sessions.items() if b.http.id == headers["mcp-session-id"])
        uid = next(u for u, r in shared.ids.pending(conn) if r == rid)
        yield uid, answered
