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
import orjson
import pytest

from mcpframe import jsonrpc
from mcpframe.server import Server
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
