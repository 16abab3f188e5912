"""`--multiplex shared`, through the proxy: an answer still queued for its session when the session ends
(DELETE) ends its POST all the same, so the POST's admission slot is freed. With room for 2 requests in
flight, 5 sessions each ending with an answer queued must leave every slot free (before the fix each kept
one, and the third session's POST got 503).

To hold an answer in the session's queue, its writer (`_drain`) is given a frame for a stream whose client
never reads, and one more frame behind it: the child's answer then queues after both."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http.options import HttpOptions

from ._listen_support import in_process_proxy, rpc
from ._shared_support import initialize, sse_post, until
from .conftest import PEER
from .test_s35_shared_fixes import _Stream

pytestmark = pytest.mark.anyio


async def test_sessions_ended_with_answers_queued_free_their_admission_slots() -> None:
    async with (
        in_process_proxy(PEER, multiplex="shared", http=HttpOptions(max_in_flight=2)) as proxy,
        httpx.AsyncClient(timeout=20) as http,
    ):
        shared = proxy.app.shared
        admission = proxy.app.posts.admission
        assert shared is not None
        with anyio.fail_after(30):
            for n in range(5):
                headers, _ = await initialize(http, proxy.url)
                [bridge] = [b for b in shared.sessions.values() if b.http.id == headers["mcp-session-id"]]
                stuck = _Stream(stuck=True)
                bridge.deliver(stuck, b"x", response=False)  # type: ignore[arg-type]  # its writer blocks
                await until(lambda bridge=bridge: not bridge.outbox)
                bridge.outbox.append((stuck, b"y", False, None, None))  # waits behind it
                answers: list[Any] = []

                body = rpc(n + 1, "echo", {"_meta": {"progressToken": n}})  # not a plain call: the full path

                async def post(
                    headers: dict[str, str] = headers, body: Any = body, answers: list[Any] = answers
                ) -> None:
                    answers.extend(await sse_post(http, proxy.url, headers, body))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(post)
                    await until(lambda bridge=bridge: len(bridge.outbox) == 2)  # the answer, queued
                    assert admission.running == 1
                    deleted = await http.delete(
                        proxy.url, headers={"mcp-session-id": headers["mcp-session-id"]}
                    )
                    assert deleted.is_success
                await until(lambda: admission.running == 0)  # its POST ended: the slot is free
            fresh, _ = await initialize(http, proxy.url)
            answer = await sse_post(http, proxy.url, fresh, rpc(99, "echo"))
        assert answer[-1]["id"] == 99
        assert admission.running == 0
