"""`close_idle_streams` in `auto` mode counts one window from the POST's last event: a POST that waited
`stream_after` for a plain JSON answer with nothing coming opens its SSE response with the first quiet wait
shortened by that time, not a whole window on top of it. On the lean server (the suspended handler's
wait is `fast_pending.Pending`'s, which hands over to `respond`) and on uvicorn (the full path's own wait).

The tests look at which timer (`mcpframe.http.deadlines`, one per length) the open response waits on, not
at the clock; the tool waits on a gate the test opens.
"""

from __future__ import annotations

import anyio
import pytest

from mcpframe.http.deadlines import Deadlines

from ._live_support import GatedTools, post_streamed, serving, until
from ._server_support import call, messages

pytestmark = pytest.mark.anyio

CLOSE_IDLE = 4.0  # long enough that no wait here runs out while a test looks at it
STREAM_AFTER = 0.3
TOKEN = {"progressToken": "t"}  # a request naming a progress token takes the lane Session's reader


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _live(wait: float) -> int:
    """Timer entries of `wait` seconds on this loop still to fire (not cancelled)."""
    return sum(1 for entry in Deadlines.of(wait)._queue if entry[1] is not None)


@pytest.mark.parametrize("token", [False, True], ids=["direct", "progress token"])
@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_post_that_waited_for_json_counts_its_quiet_from_it(http_server: str, token: bool) -> None:
    tools = GatedTools("close-idle")
    options = {"response_mode": "auto", "stream_after": STREAM_AFTER, "close_idle_streams": CLOSE_IDLE}
    rest = CLOSE_IDLE - STREAM_AFTER
    async with serving(tools, http_server, **options) as (url, app, client, headers):
        body = call("hold", {"text": "h"}, rid=5, **(TOKEN if token else {}))
        with anyio.fail_after(10):
            response = await post_streamed(client, url, headers, body)
            try:
                assert response.headers["content-type"].startswith("text/event-stream")
                chunks = response.aiter_bytes()
                first = await chunks.__anext__()
                assert b"retry: " in first, first  # the priming event, nothing else came
                await until(lambda: _live(rest) + _live(CLOSE_IDLE) > 0)  # it waits right after writing it
                assert _live(rest) == 1
                assert _live(CLOSE_IDLE) == 0  # not a whole window after the JSON wait
                tools.gate.set()
                text = (first + b"".join([chunk async for chunk in chunks])).decode()
            finally:
                await response.aclose()
        answer = [m for m in messages(text) if m.get("id") == 5]
        assert answer[0]["result"]["content"] == [{"type": "text", "text": "h"}]
        assert app.posts.admission.running == 0


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_json_wait_as_long_as_the_window_ends_sse_after_priming(http_server: str) -> None:
    """The JSON wait took the whole window (`json_wait` is at most `close_idle_streams`): the SSE response
    ends right after the priming event, and the client resumes from it."""
    tools = GatedTools("close-idle")
    options = {"response_mode": "auto", "stream_after": 60.0, "close_idle_streams": STREAM_AFTER}
    async with serving(tools, http_server, **options) as (url, _app, client, headers):
        with anyio.fail_after(10):
            response = await client.post(url, json=call("hold", {"text": "h"}, rid=5), headers=headers)
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.text.split("\n")
        assert lines[0].startswith("id: "), response.text
        assert lines[1].startswith("retry: "), response.text
        assert response.text.count("data:") == 1  # the priming event alone
        assert tools.finished == 0  # the tool still waits: its answer is for the resumed stream
        tools.gate.set()
