"""The lean server run by plain `asyncio.run` (no async library named in the context): a 2026-07-28 client
that leaves a JSON wait is told to its handler from a loop callback where no task runs (the connection's
`connection_lost`, a `Deadlines` timer). The handler is cancelled once, nothing is logged at ERROR, and the
POST's admission slot is freed, on the full path (a request that makes the first lane) and the fast one.

No test here waits for time to pass: the tool waits on a gate, the test on the events the tool sets.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from typing import Any

import anyio
import httpx
import pytest
import sniffio

from ._live_support import live_app, until
from ._server_support import call, modern_meta, raw_post
from .test_modern_disconnect import Tools, _headers


async def _leave_a_json_wait(warm: bool) -> tuple[int, int, int]:
    """Serve `Tools` on the lean server; (after a first call that leaves an idle lane, if `warm`) a client
    leaves its `hold` call's JSON wait. The handler's (cancelled, finished) counts and the admission's
    running count once the cancel came."""
    tools = Tools()
    async with (
        live_app(tools, http_server="mcpframe", response_mode="auto", stream_after=60.0) as (url, app),
        httpx.AsyncClient(timeout=10) as client,
    ):
        if warm:
            body = call("echo", {"text": "w"}, rid=1, **modern_meta())
            assert (await client.post(url, json=body, headers=_headers("echo"))).status_code == 200
        host, port = url.split("/")[2].split(":")
        with anyio.fail_after(10):
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw_post(url, _headers("hold"), call("hold", {"text": "x"}, rid=7, **modern_meta())))
            await tools.entered.wait()
            writer.close()
            await tools.gone.wait()  # the client's leaving cancelled the handler
            await until(lambda: app.posts.admission.running == 0)
        tools.gate.set()
        return tools.cancelled, tools.finished, app.posts.admission.running


def _in_plain_asyncio_run(warm: bool) -> tuple[int, int, int]:
    """`_leave_a_json_wait(warm)` under `asyncio.run`, in a new thread with an empty context."""
    result: list[tuple[int, int, int]] = []

    def run() -> None:  # a new thread and an empty context: nothing inherited names asyncio to sniffio
        assert sniffio.thread_local.name is None
        result.append(contextvars.Context().run(asyncio.run, _leave_a_json_wait(warm)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    return result[0]


@pytest.mark.parametrize("warm", [False, True], ids=["full", "fast"])
def test_a_client_leaving_a_json_wait_under_plain_asyncio_run(warm: bool, caplog: Any) -> None:
    caplog.set_level(logging.ERROR)
    assert _in_plain_asyncio_run(warm) == (1, 0, 0)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
