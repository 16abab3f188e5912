"""A graceful stop's tracking, after its review (s29):

- `Request.abort` with an error whose `data` cannot be encoded still answers: the error goes out without it,
  as a handler's own such error does.
- An abort of a request that has not started keeps nothing: the request starts and answers as usual, and a
  cancellation from elsewhere later is not taken for the abort (no stale error, the cancel not withdrawn).
- Abort, then the client's cancel: no answer at all.
- A stop holds no Session that ended once its connection closed; a closed Session with requests still in
  flight is kept (the stop must still find, and cut, them).
- 2026-07-28 POSTs on `serve_http` itself (no entry point's stop) cut at the end of the grace period: one
  -32000 error each, each handler cancelled once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import httpx
import orjson
import pytest

from mcpframe import jsonrpc
from mcpframe.http.server import HttpOptions, serve_http
from mcpframe.server import Server
from mcpframe.server.eras import PROTOCOL_VERSION_KEY
from mcpframe.server.lifecycle import Stop
from mcpframe.session import JSONRPCError, Request, Session
from mcpframe.transports.memory import MemoryTransport, memory_pair

pytestmark = pytest.mark.anyio

CUT = JSONRPCError(jsonrpc.CONNECTION_CLOSED, "cut")


async def running_request(session: Session, entered: anyio.Event) -> Request:
    """The one request in flight on ``session``, once its handler runs (it sets ``entered``)."""
    with anyio.fail_after(10):
        await entered.wait()
    (request,) = session.requests_in_flight()
    return request


async def test_an_abort_whose_data_cannot_be_encoded_answers_without_it() -> None:
    near, far = memory_pair()
    client = Session(near)

    entered = anyio.Event()

    async def handler(request: Request) -> Any:
        if request.method == "x":
            entered.set()
            await anyio.sleep_forever()
        return {}

    server = Session(far, request_handler=handler)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        tg.start_soon(client.run)
        errors: list[JSONRPCError] = []

        async def call() -> None:
            with pytest.raises(JSONRPCError) as caught:
                await client.request("x", {})
            errors.append(caught.value)

        tg.start_soon(call)
        request = await running_request(server, entered)
        request.abort(JSONRPCError(jsonrpc.CONNECTION_CLOSED, "cut", data=object()))
        with anyio.fail_after(10):
            await request.wait_done()
            assert await client.request("ping") is not None  # answered after the aborted one's answer
        tg.cancel_scope.cancel()
    (error,) = errors
    assert (error.code, error.message, error.data) == (jsonrpc.CONNECTION_CLOSED, "cut", None)


async def read_answers(near: MemoryTransport, until: int) -> dict[Any, Any]:
    answers: dict[Any, Any] = {}
    buffer = b""
    with anyio.fail_after(10):
        while until not in answers:
            buffer += await near.receive()
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    message = orjson.loads(line)
                    answers[message["id"]] = message
    return answers


def frame(rid: int, method: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method}) + b"\n"


async def test_an_abort_before_the_request_started_is_not_taken_for_a_later_cancel() -> None:
    near, far = memory_pair()
    entered: list[str] = []

    async def handler(request: Request) -> Any:
        entered.append(request.method)
        if request.method == "first":  # the second is registered, its task not run yet
            (second,) = [r for r in request.session.requests_in_flight() if r.method == "second"]
            assert "second" not in entered
            second.abort(CUT)
            return "first"
        if request.method == "second":  # cancelled from elsewhere (not the abort, not the peer)
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(0)
        return "pong"

    server = Session(far, request_handler=handler)
    server.eager_handlers = False  # each request's first step on a later loop iteration
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        await near.send(frame(1, "first") + frame(2, "second"))  # one read: both registered at once
        answers = await read_answers(near, until=1)
        await near.send(frame(3, "third"))
        answers.update(await read_answers(near, until=3))
        tg.cancel_scope.cancel()
    assert entered == ["first", "second", "third"]  # the aborted one started as usual
    assert answers[1]["result"] == "first"
    assert answers[3]["result"] == "pong"
    assert 2 not in answers  # the cancel was not taken for the abort: no stale -32000 answer


@pytest.mark.parametrize("eager", [True, False])
async def test_abort_then_the_clients_cancel_answers_nothing(eager: bool) -> None:
    near, far = memory_pair()
    client = Session(near)
    cancels: list[str] = []

    entered = anyio.Event()

    async def handler(request: Request) -> Any:
        if request.method != "x":
            return {}
        entered.set()
        try:
            await anyio.sleep_forever()
        except asyncio.CancelledError:
            cancels.append(request.method)
            raise

    server = Session(far, request_handler=handler)
    server.eager_handlers = eager
    results: list[Any] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        tg.start_soon(client.run)

        async def call() -> None:
            results.append(await client.request("x", {}))

        tg.start_soon(call)
        request = await running_request(server, entered)
        request.abort(CUT)
        request.cancel()  # as notifications/cancelled does, before the handler has left
        with anyio.fail_after(10):
            await request.wait_done()
            assert await client.request("ping") is not None  # answered after anything for the first
        tg.cancel_scope.cancel()  # no answer came: the client stops waiting
    assert results == []
    assert cancels == ["x"]


async def test_a_closed_session_with_requests_in_flight_is_kept() -> None:
    stop = Stop(1.0)
    near, far = memory_pair()
    gate = anyio.Event()
    entered = anyio.Event()

    async def handler(request: Request) -> Any:
        entered.set()
        await gate.wait()
        return 1

    server = Session(far, request_handler=handler)
    client = Session(near)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        tg.start_soon(client.run)
        tg.start_soon(client.request, "x", {})
        request = await running_request(server, entered)
        stop.watch(server)
        server.closed = True  # as aclose() marks it before its handlers are stopped
        stop.forget(server)
        for _ in range(200):  # past every prune point of watch()
            ended = Session(memory_pair()[0])
            ended.closed = True
            stop.watch(ended)
        assert server in stop.sessions
        assert stop._running == [request]  # still found, so still waited for (and cut)
        gate.set()
        await request.wait_done()
        stop.forget(server)
        assert server not in stop.sessions  # ended now: let go
        tg.cancel_scope.cancel()


async def test_a_stop_lets_go_of_a_session_once_its_connection_closed() -> None:
    server = Server("t")
    conn = server.connection()
    stop = Stop(1.0)
    stop.track_connection(conn)
    near, far = memory_pair()
    client = Session(near)
    async with anyio.create_task_group() as tg:
        tg.start_soon(conn.run, Session(far, request_handler=conn.handle_request))
        tg.start_soon(client.run)
        with anyio.fail_after(10):
            assert await client.request("ping") == {}
        assert len(stop.sessions) == 1
        with anyio.fail_after(10):
            await client.aclose()
    assert conn.tracked_by == ()
    assert not stop.sessions


def modern_call(rid: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    meta = {
        PROTOCOL_VERSION_KEY: "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    params = {"name": name, "arguments": arguments, "_meta": meta}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def modern_headers(name: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "accept": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_modern_posts_cut_on_serve_http_get_one_error_each(http_server: str) -> None:
    server = Server("p")
    entered: list[int] = []
    cancels: list[int] = []
    all_in = anyio.Event()

    @server.tool
    async def stuck(n: int) -> str:
        """Never answers by itself."""
        entered.append(n)
        if len(entered) == 3:
            all_in.set()
        try:
            await anyio.sleep_forever()
        except BaseException:
            cancels.append(n)
            raise
        return "never"

    ready: list[str] = []
    started = anyio.Event()
    stopped = anyio.Event()
    serving = anyio.CancelScope()

    def on_ready(url: str) -> None:
        ready.append(url)
        started.set()

    async def serve() -> None:
        with serving:
            await serve_http(
                server, port=0, options=HttpOptions(), ready=on_ready, http_server=http_server, grace=0.0
            )
        stopped.set()

    got: dict[int, httpx.Response] = {}
    async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=30) as client:
        tg.start_soon(serve)
        with anyio.fail_after(10):
            await started.wait()
        url = ready[0]

        async def post(rid: int) -> None:
            got[rid] = await client.post(
                url, json=modern_call(rid, "stuck", {"n": rid}), headers=modern_headers("stuck")
            )

        with anyio.fail_after(30):
            async with anyio.create_task_group() as posting:
                for rid in (5, 6, 7):
                    posting.start_soon(post, rid)
                await all_in.wait()
                serving.cancel()  # the server stops: every `stuck` outlives the grace period
            await stopped.wait()
    assert sorted(got) == [5, 6, 7]
    for rid, response in got.items():
        answer = response.json()
        assert answer["id"] == rid
        assert answer["error"]["code"] == jsonrpc.CONNECTION_CLOSED
        assert answer["error"]["message"].startswith("Server shutting down")
    assert sorted(cancels) == [5, 6, 7]  # each cut once
