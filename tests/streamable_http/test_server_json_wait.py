"""The full ASGI path's wait for a JSON answer (`PostHandler._json_answer`): its `stream_after` is one entry
of the loop's shared `Deadlines`, not a `call_later` per POST, cancelled when the answer comes first and
switching the answer to SSE when it expires.

No test here waits for time to pass: tools wait on gates the test opens once it has seen what it needs.
"""

from __future__ import annotations

import anyio
import httpx
import pytest

from ._server_support import call, messages
from .test_server_deferred import Tools, _waiting_deadlines, serving

pytestmark = pytest.mark.anyio


async def test_a_json_wait_is_a_shared_deadline_cancelled_by_the_answer() -> None:
    tools = Tools()
    served = serving(tools, "uvicorn", response_mode="auto", stream_after=60.0)
    async with served as (url, app, client, headers):
        got: list[httpx.Response] = []
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def post() -> None:
                    body = call("hold", {"text": "h"}, rid=7)
                    got.append(await client.post(url, json=body, headers=headers))

                tg.start_soon(post)
                await tools.entered.wait()
                while not _waiting_deadlines():  # the POST reaches its wait a few loop steps later
                    await anyio.sleep(0)
                assert len(_waiting_deadlines()) == 1  # one entry of the shared timer, for this POST
                tools.gate.set()
        assert got[0].headers["content-type"] == "application/json"
        assert got[0].json()["result"]["content"] == [{"type": "text", "text": "h"}]
        assert not _waiting_deadlines()  # the answer came first: the deadline was cancelled
        assert app.posts.admission.running == 0


async def test_a_json_wait_that_expires_switches_the_answer_to_sse() -> None:
    tools = Tools()
    served = serving(tools, "uvicorn", response_mode="auto", stream_after=0)
    async with served as (url, _app, client, headers):
        with anyio.fail_after(10):
            body = call("hold", {"text": "s"}, rid=8)
            request = client.build_request("POST", url, json=body, headers=headers)
            response = await client.send(request, stream=True)
            try:
                assert response.headers["content-type"].startswith("text/event-stream")
                assert tools.finished == 0  # the head came while the tool still waited
                tools.gate.set()
                text = (await response.aread()).decode()
            finally:
                await response.aclose()
        answer = [m for m in messages(text) if m.get("id") == 8]
        assert answer[0]["result"]["content"] == [{"type": "text", "text": "s"}]
        assert not _waiting_deadlines()
