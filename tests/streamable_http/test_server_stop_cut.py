"""`serve_http` stopped (cancelled by its caller, no entry point's `Stop` around it) while a POST's handler
still runs past the grace period: on the lean server and on uvicorn alike, the client gets a -32000 error
for its request ("Server shutting down", the text a `Stop` gives) and a proper end of the response, over
SSE (resumable or not) and JSON alike; nothing is cut mid-stream.

Nothing here waits for time to pass but the servers' own stop: the tool waits forever, and the test cancels
the server once it runs.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http.server import HttpOptions, serve_http
from mcpframe.server import Server

from ._server_support import call, messages, open_session

pytestmark = pytest.mark.anyio

MODES = [
    pytest.param("sse", {"event_store": None}, "application/json, text/event-stream", id="sse"),
    pytest.param("resumable", {}, "application/json, text/event-stream", id="resumable"),
    pytest.param("auto", {}, "application/json", id="json"),
]


@pytest.mark.parametrize("grace", [0.0, 0.2])
@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
@pytest.mark.parametrize(("mode", "store", "accept"), MODES)
async def test_a_request_still_running_when_the_server_stops_is_answered_with_an_error(
    http_server: str, mode: str, store: dict[str, Any], accept: str, grace: float
) -> None:
    server = Server("stop-cut", version="1.0.0")
    entered = anyio.Event()
    cancelled: list[str] = []

    @server.tool
    async def stuck() -> str:
        """Never answers by itself."""
        entered.set()
        try:
            await anyio.sleep_forever()
        except BaseException:
            cancelled.append("stuck")
            raise
        return "never"

    opts = HttpOptions(response_mode=mode, **store)  # type: ignore[arg-type]
    ready: list[str] = []
    started = anyio.Event()
    stopped = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        started.set()

    serving = anyio.CancelScope()

    async def serve() -> None:
        with serving:
            await serve_http(
                server,
                port=0,
                options=opts,
                ready=on_ready,
                http_server=http_server,
                grace=grace,  # type: ignore[arg-type]
            )
        stopped.set()

    got: list[httpx.Response] = []
    async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=30) as client:
        tg.start_soon(serve)
        with anyio.fail_after(10):
            await started.wait()
        url = ready[0]
        headers = {**await open_session(client, url), "accept": accept}

        async def post() -> None:  # the whole answer, or an error if it is cut
            got.append(await client.post(url, json=call("stuck", rid=5), headers=headers))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as posting:
                posting.start_soon(post)
                await entered.wait()
                serving.cancel()  # the server stops: `stuck` outlives the grace period
            await stopped.wait()
    response = got[0]
    if accept == "application/json":
        assert response.headers["content-type"] == "application/json"
        answers = [response.json()]
    else:
        assert response.headers["content-type"].startswith("text/event-stream")
        answers = messages(response.text)
    assert answers[-1]["id"] == 5
    assert answers[-1]["error"]["code"] == -32000
    assert answers[-1]["error"]["message"].startswith("Server shutting down")
    assert cancelled == ["stuck"]  # cut once, at the end of the grace period
