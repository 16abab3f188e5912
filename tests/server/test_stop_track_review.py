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

from typing import Any

import anyio
import pytest

from mcpframe import jsonrpc
from mcpframe.session import JSONRPCError, Request, Session
from mcpframe.transports.memory import memory_pair

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
