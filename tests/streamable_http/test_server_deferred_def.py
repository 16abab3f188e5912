"""A `def` tool's call over Streamable HTTP, cancelled or its session deleted while it runs on its worker
thread: the task-of-its-own path (``Server.suspends``) ends it as the async tools' tests in
test_server_deferred.py end theirs. The POST gets no answer (202, empty), admission is back to 0, no
``Request`` is left registered, and the id is free again.

No test here waits for time to pass: the tool waits on a gate the test opens once it has seen what it needs.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from mcpframe import jsonrpc
from mcpframe.http.responses import session_ended_text
from mcpframe.session import Request
from mcpframe.session.eager import AVAILABLE as EAGER

from ._server_support import call
from .test_server_deferred import LEAN_AND_UVICORN, Tools, serving, until

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class DefTools(Tools):
    """``Tools`` with a `def` tool that waits on a thread gate, and a record of what ``suspends`` said."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.release = threading.Event()
        self.done = 0
        self.asked: list[tuple[Request, bool]] = []
        real = self.server.suspends

        def suspends(request: Request) -> bool:
            said = real(request)
            self.asked.append((request, said))
            return said

        self.server.suspends = suspends  # type: ignore[method-assign]  # what each new Session is given

        @self.server.tool
        def waits(text: str) -> str:
            """A `def` tool that waits for the test on its worker thread."""
            self.started.set()
            self.release.wait(10)
            self.done += 1
            return text

    def left_registered(self) -> list[Request]:
        """The `def` calls the task-of-its-own path took that are still among their Session's requests."""
        return [r for r, said in self.asked if said and r.session._incoming.get(r.id) is r]


@asynccontextmanager
async def held_def_call(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], tools: DefTools, rid: int
) -> AsyncIterator[list[httpx.Response]]:
    """POST a call of `waits` in a task; the block runs once it runs on its worker thread, and the way out
    waits for the POST's response, which the list yielded then holds (all within 10 seconds)."""
    got: list[httpx.Response] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def post() -> None:
                got.append(
                    await client.post(url, json=call("waits", {"text": "w"}, rid=rid), headers=headers)
                )

            tg.start_soon(post)
            assert await anyio.to_thread.run_sync(tools.started.wait, 10)
            yield got


def _ended_cleanly(tools: DefTools, app: Any, rid: int) -> None:
    # the call took the task-of-its-own path (without an eager start all do, and the rule is not asked)
    assert [r.id for r, said in tools.asked if said] == ([rid] if EAGER else [])
    assert tools.left_registered() == []
    assert app.posts.admission.running == 0


@LEAN_AND_UVICORN
async def test_a_cancel_while_a_def_tool_runs_ends_its_post_without_an_answer(http_server: str) -> None:
    tools = DefTools()
    async with serving(tools, http_server, response_mode="auto") as (url, app, client, headers):
        async with held_def_call(client, url, headers, tools, rid=8) as got:
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}}
            assert (await client.post(url, json=cancel, headers=headers)).status_code == 202
        assert (got[0].status_code, got[0].content) == (200, b"")  # a cancelled request gets no answer
        assert got[0].headers["content-type"] == "text/event-stream"  # never 202 for a request
        tools.release.set()  # the abandoned thread ends; its result goes nowhere
        with anyio.fail_after(10):
            await until(lambda: tools.done == 1 and app.posts.admission.running == 0)
        _ended_cleanly(tools, app, 8)
        again = await client.post(url, json=call("echo", {"text": "again"}, rid=8), headers=headers)
        assert again.json()["result"]["content"] == [{"type": "text", "text": "again"}]  # the id is free


@LEAN_AND_UVICORN
async def test_a_session_deleted_while_a_def_tool_runs_ends_its_post_with_an_error(
    http_server: str,
) -> None:
    tools = DefTools()
    async with serving(tools, http_server, response_mode="auto") as (url, app, client, headers):
        async with held_def_call(client, url, headers, tools, rid=9) as got:
            assert (await client.delete(url, headers=headers)).status_code == 200
        # no answer came, its session ended: said with an error (the answer was still awaited as JSON)
        assert (got[0].status_code, got[0].headers["content-type"]) == (200, "application/json")
        assert got[0].json()["error"] == {"code": jsonrpc.CONNECTION_CLOSED, "message": session_ended_text(9)}
        tools.release.set()
        with anyio.fail_after(10):
            await until(lambda: tools.done == 1 and app.posts.admission.running == 0)
        _ended_cleanly(tools, app, 9)
