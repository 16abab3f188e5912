"""Flow control over Streamable HTTP: past `max_in_flight` a POST waits in a queue; past `max_queued`, 503.

Through a live uvicorn (real connections, real disconnects); the bound is the server's, shared by every HTTP
session and the stateless (2026-07-28) requests. `Admission` itself is tested directly for its order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from tests.streamable_http._client_support import serve_asgi

from mcpframe import jsonrpc
from mcpframe.cli.serve import serve_main
from mcpframe.http import server as http_server
from mcpframe.http.admission import Admission, Slot
from mcpframe.http.server import HttpOptions, StreamableHTTPServer
from mcpframe.server import Server

from ._server_support import JSON_AND_SSE, EventReader, answer, call, init_body, modern_meta, session_headers

pytestmark = pytest.mark.anyio


class Gate:
    """A server whose `hold` tool counts its starts and answers once the gate opens."""

    def __init__(self) -> None:
        self.open = anyio.Event()
        self.started = 0
        self.server = Server("flow", version="1.0.0")

        @self.server.tool
        async def hold(n: int) -> int:
            """Wait for the gate, then return n."""
            self.started += 1
            await self.open.wait()
            return n


def modern_hold(n: int) -> tuple[dict[str, Any], dict[str, str]]:
    """A stateless `hold` call (body, headers) answering `n`, with request id `n`."""
    headers = {**JSON_AND_SSE, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
    headers["mcp-name"] = "hold"
    return call("hold", {"n": n}, rid=n, **modern_meta()), headers


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until `condition()` holds (bounded: a hang fails the test)."""
    with anyio.fail_after(10):
        while not condition():
            await anyio.sleep(0)


async def legacy_session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    """Initialize a 2025-11-25 session; its headers."""
    response = await client.post(url, json=init_body(), headers=JSON_AND_SSE)
    headers = session_headers(response.headers["mcp-session-id"])
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, json=note, headers=headers)).status_code == 202
    return headers


async def test_posts_past_the_bound_wait_and_past_the_queue_get_503() -> None:
    gate = Gate()
    http = StreamableHTTPServer(gate.server, HttpOptions(max_in_flight=2, max_queued=2))
    admission = http.posts.admission
    answers: dict[int, Any] = {}
    async with serve_asgi(http.app) as url, httpx.AsyncClient(timeout=30) as client:
        in_session = await legacy_session(client, url)

        async def post(n: int, headers: dict[str, str] | None = None) -> None:
            body, modern = modern_hold(n)
            if headers is not None:  # the same call inside the legacy session
                body = call("hold", {"n": n}, rid=n)
            answers[n] = answer(await client.post(url, json=body, headers=headers or modern))

        async with anyio.create_task_group() as tg:
            tg.start_soon(post, 1)
            tg.start_soon(post, 2)
            await until(lambda: gate.started == 2)
            tg.start_soon(post, 3)
            tg.start_soon(post, 4, in_session)  # the bound is the server's: a session's POST waits too
            await until(lambda: admission.queued == 2)
            assert gate.started == 2

            body, headers = modern_hold(5)
            refused = await client.post(url, json=body, headers=headers)
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            error = refused.json()
            assert error["id"] == 5
            assert error["error"]["code"] == jsonrpc.INTERNAL_ERROR
            assert "busy" in error["error"]["message"]
            assert "max_in_flight" in error["error"]["message"]

            pinging = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
            ping = await client.post(url, json=pinging, headers=in_session)
            assert answer(ping) == {"jsonrpc": "2.0", "id": 9, "result": {}}  # pings pass the queue
            assert (gate.started, admission.queued) == (2, 2)
            gate.open.set()
        assert {n: a["result"]["content"][0]["text"] for n, a in answers.items()} == {
            1: "1",
            2: "2",
            3: "3",
            4: "4",
        }
        assert gate.started == 4
        await until(lambda: admission.running == 0)


async def _post_and_leave(port: int, body: dict[str, Any], headers: dict[str, str]) -> anyio.abc.SocketStream:
    """Send a whole POST on a raw connection (left open, unread)."""
    data = json.dumps(body).encode()
    lines = ["POST /mcp HTTP/1.1", f"host: 127.0.0.1:{port}", f"content-length: {len(data)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    stream = await anyio.connect_tcp("127.0.0.1", port)
    await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
    return stream


async def test_a_queued_post_whose_client_disconnects_leaves_the_queue() -> None:
    gate = Gate()
    http = StreamableHTTPServer(gate.server, HttpOptions(max_in_flight=1, max_queued=1))
    admission = http.posts.admission
    answers: list[Any] = []
    async with serve_asgi(http.app) as url, httpx.AsyncClient(timeout=30) as client:

        async def post(n: int) -> None:
            body, headers = modern_hold(n)
            answers.append(answer(await client.post(url, json=body, headers=headers)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(post, 1)
            await until(lambda: gate.started == 1)
            leaver = await _post_and_leave(httpx.URL(url).port or 80, *modern_hold(2))
            await until(lambda: admission.queued == 1)
            await leaver.aclose()
            await until(lambda: admission.queued == 0)  # it left: its place is free again
            tg.start_soon(post, 3)
            await until(lambda: admission.queued == 1)  # waits (not 503): the queue had room
            gate.open.set()
        assert sorted(a["result"]["content"][0]["text"] for a in answers) == ["1", "3"]
        assert gate.started == 2  # the abandoned request never ran
        await until(lambda: admission.running == 0)


async def never() -> dict[str, Any]:
    """An ASGI `receive` whose client never disconnects."""
    await anyio.sleep_forever()
    raise AssertionError


async def test_admission_is_first_come_first_served_by_weight() -> None:
    admission = Admission(max_in_flight=2, max_queued=2)
    first, second = await admission.enter(1, never), await admission.enter(1, never)
    assert isinstance(first, Slot)
    assert isinstance(second, Slot)
    got: list[tuple[str, Slot | str]] = []

    async def enter(name: str, requests: int) -> None:
        got.append((name, await admission.enter(requests, never)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(enter, "batch", 5)  # larger than the bound: needs all of it, then runs alone
        await until(lambda: admission.queued == 1)
        tg.start_soon(enter, "single", 1)
        await until(lambda: admission.queued == 2)
        assert await admission.enter(1, never) == "full"
        ping = await admission.enter(1, never, ping=True)  # pings get room up to twice the bound
        assert isinstance(ping, Slot)
        assert admission.running == 3
        first.release()
        first.release()  # idempotent
        ping.release()
        # one unit free: the batch waits for two, and the single behind it does not jump the queue
        assert (admission.running, admission.queued) == (1, 2)
        second.release()
        await until(lambda: len(got) == 1)
        assert got[0][0] == "batch"
        assert (admission.running, admission.queued) == (2, 1)
        batch = got[0][1]
        assert isinstance(batch, Slot)
        batch.release()
    assert [name for name, _ in got] == ["batch", "single"]
    with pytest.raises(ValueError, match="max_in_flight"):
        Admission(max_in_flight=0, max_queued=1)
    with pytest.raises(ValueError, match="max_queued"):
        Admission(max_in_flight=1, max_queued=-1)


def test_the_cli_passes_both_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[HttpOptions] = []

    async def fake_serve_http(server: Server, *, options: HttpOptions, **kwargs: Any) -> None:
        seen.append(options)

    monkeypatch.setattr(http_server, "serve_http", fake_serve_http)
    argv = ["examples.everything:server", "--http", "--max-in-flight", "7", "--max-queued", "0"]
    assert serve_main(argv) == 0
    assert [(o.max_in_flight, o.max_queued) for o in seen] == [(7, 0)]
    assert serve_main(argv[:2]) == 0
    assert (seen[1].max_in_flight, seen[1].max_queued) == (
        HttpOptions().max_in_flight,
        HttpOptions().max_queued,
    )


async def test_a_request_of_the_main_session_gets_the_clients_answer() -> None:
    """A request the main Session sends (outside any POST: what a notification handler asking the client
    would send) goes out on the GET stream with a session-wide id; the client's POSTed answer comes back to
    it, not to an exchange (before, it was dropped as an unknown id and the request timed out)."""
    http = StreamableHTTPServer(Server("main-session"), HttpOptions())
    async with serve_asgi(http.app) as url, httpx.AsyncClient(timeout=10) as client:
        first = await client.post(url, json=init_body(), headers=JSON_AND_SSE)
        headers = session_headers(first.headers["mcp-session-id"])
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await client.post(url, json=note, headers=headers)).status_code == 202
        session = http.sessions.sessions[first.headers["mcp-session-id"]]
        got: dict[str, Any] = {}

        async def ask() -> None:
            got["answer"] = await session.main.request("roots/list", None, timeout=10)

        async with client.stream("GET", url, headers=headers) as stream, anyio.create_task_group() as tg:
            reader = EventReader(stream)
            tg.start_soon(ask)
            with anyio.fail_after(10):
                events = [e for e in await reader.read(2) if e.get("data")]
                while not events:
                    events = [e for e in await reader.read(1) if e.get("data")]
            request = json.loads(events[0]["data"])
            assert request["method"] == "roots/list"
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": {"roots": [{"uri": "file:///w"}]}}
            assert (await client.post(url, json=reply, headers=headers)).status_code == 202
            with anyio.fail_after(10):
                while "answer" not in got:
                    await anyio.sleep(0.01)
            assert (await client.delete(url, headers=headers)).status_code == 200  # ends the GET stream
    assert got["answer"] == {"roots": [{"uri": "file:///w"}]}
