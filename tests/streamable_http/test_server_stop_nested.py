"""A `serve_http` started from inside another one (here: from the first one's ready callback, so under the
`Stop` the first made for itself) gets a `Stop` of its own: stopping the inner server settles only its own
requests. The outer server's request in flight at that moment still gets its answer, and the outer server
keeps taking new requests. The same under an entry point's `Stop` (`run_stoppable`, as `mcpframe serve`
runs), which each server follows without sharing it: requesting it still stops both.

Nothing waits for time to pass: the inner server stops with a 0 s grace, the outer tool waits on an event.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http.server import serve_http
from mcpframe.server import Server
from mcpframe.server.lifecycle import Stop, current_stop, run_stoppable

from ._server_support import call, messages, open_session

pytestmark = pytest.mark.anyio


def last_answer(response: httpx.Response) -> Any:
    """The last JSON-RPC message of a POST's answer, JSON or SSE."""
    if response.headers["content-type"] == "application/json":
        return response.json()
    return messages(response.text)[-1]


@pytest.mark.parametrize("entry", [False, True], ids=["alone", "under_entry"])
@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_stopping_a_server_started_inside_another_leaves_the_outer_ones_requests_alone(
    http_server: str, entry: bool
) -> None:
    if entry:
        await run_stoppable(lambda: _inner_stops_alone(http_server))
    else:
        await _inner_stops_alone(http_server)


async def _inner_stops_alone(http_server: str) -> None:
    """The test's body, under whatever `Stop` the caller runs it."""
    entry = current_stop()
    outer = Server("outer", version="1.0.0")
    inner = Server("inner", version="1.0.0")
    entered = anyio.Event()
    release = anyio.Event()
    stops: dict[str, Stop | None] = {}

    @outer.tool
    async def held() -> str:
        """Answers once released."""
        entered.set()
        await release.wait()
        return "held done"

    @outer.tool
    async def quick() -> str:
        """Answers at once."""
        return "quick done"

    urls: dict[str, str] = {}
    outer_up, inner_up, inner_down = anyio.Event(), anyio.Event(), anyio.Event()
    inner_scope = anyio.CancelScope()

    async def serve_inner() -> None:
        def on_ready(url: str) -> None:
            stops["inner"] = current_stop()
            urls["inner"] = url
            inner_up.set()

        with inner_scope:
            await serve_http(inner, port=0, ready=on_ready, http_server=http_server, grace=0.0)  # type: ignore[arg-type]
        inner_down.set()

    async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=30) as client:

        def on_outer_ready(url: str) -> None:
            stops["outer"] = current_stop()
            urls["outer"] = url
            outer_up.set()
            tg.start_soon(serve_inner)  # started under the outer server's own `Stop`

        tg.start_soon(
            lambda: serve_http(outer, port=0, ready=on_outer_ready, http_server=http_server, grace=0.0)  # type: ignore[arg-type]
        )
        with anyio.fail_after(10):
            await outer_up.wait()
            await inner_up.wait()
        outer_stop = stops["outer"]
        assert outer_stop is not None
        assert stops["inner"] is not None
        assert stops["inner"] is not outer_stop
        assert entry is None or outer_stop is not entry
        url = urls["outer"]
        headers = {**await open_session(client, url), "accept": "application/json, text/event-stream"}
        got: list[httpx.Response] = []

        async def post_held() -> None:
            got.append(await client.post(url, json=call("held", rid=5), headers=headers))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as posting:
                posting.start_soon(post_held)
                await entered.wait()
                inner_scope.cancel()  # the inner server stops; its settling must not touch `held`
                await inner_down.wait()
                assert not outer_stop.refusing
                release.set()
            later = await client.post(url, json=call("quick", rid=6), headers=headers)
        held_answer = last_answer(got[0])
        assert held_answer["id"] == 5
        assert held_answer["result"]["content"][0]["text"] == "held done"
        assert later.status_code == 200
        later_answer = last_answer(later)
        assert later_answer["id"] == 6
        assert later_answer["result"]["content"][0]["text"] == "quick done"
        if entry is None:
            tg.cancel_scope.cancel()
        else:  # as a signal does: the entry point's Stop is requested (its scope cancels this body), and
            entry.request()  # the outer server's own Stop with it
            assert outer_stop.requested.is_set()
