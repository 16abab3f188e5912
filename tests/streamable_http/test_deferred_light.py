"""A suspended handler's JSON answer on the lean server with no `Stream` (`http/fast_pending.py`'s
`Pending`): the answer goes straight to its POST, and every other way the request can go on or end still
works, a stream being made only when something other than the answer must be routed.

Each test checks what the light path must get right: the answer reaches its own POST (never another's),
the admission slot is released once, the lane goes back to its pool once (or, after a cancel, not at all),
the session keeps no stream for it. No test waits for time to pass: tools wait on gates the test opens, and
`stream_after` is long (or 0, where the switch to SSE is the point) so a loaded machine cannot change an
answer's shape.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from mcpframe import jsonrpc
from mcpframe.http import fast_pending
from mcpframe.http.fast_pending import Pending
from mcpframe.http.responses import session_ended_text
from mcpframe.http.server import HttpOptions, serve_http
from mcpframe.http.sessions import HttpSession
from mcpframe.server import Context

from ._fast_support import taken
from ._live_support import LateLogTools, live_app, post_streamed, serving, session_of, until
from ._server_support import JSON_AND_SSE, MODERN, call, messages, modern_meta, open_session, raw_post

__all__ = ["taken"]  # the fixture, used by name

pytestmark = pytest.mark.anyio

LONG = 60.0
"""`stream_after` of the tests whose answer must stay JSON: far past any wait of theirs."""


class Tools(LateLogTools):
    """`LateLogTools` plus `other` (suspends on a gate of its own) and `log_first` (logs, then suspends)."""

    def __init__(self) -> None:
        super().__init__("deferred-light")
        self.other_gate = anyio.Event()
        self.other_entered = anyio.Event()
        tools = self

        @self.server.tool
        async def other(text: str) -> str:
            """Suspends until the test opens `other_gate`."""
            tools.other_entered.set()
            await tools.other_gate.wait()
            return text

        @self.server.tool
        async def log_first(text: str, ctx: Context) -> str:
            """Logs, then suspends until the test opens `gate`."""
            await ctx.info("first")
            tools.entered.set()
            try:
                await tools.gate.wait()
            except BaseException:
                tools.cancelled += 1
                raise
            return text


def _idle_lanes(session: HttpSession) -> list[Any]:
    assert session.lanes is not None
    return list(session.lanes._idle)


@contextlib.asynccontextmanager
async def _posting(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], body: dict[str, Any]
) -> AsyncIterator[list[httpx.Response]]:
    """POST `body` in a task; the way out waits (within 10 s) for its response, in the list yielded."""
    got: list[httpx.Response] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def post() -> None:
                got.append(await client.post(url, json=body, headers=headers))

            tg.start_soon(post)
            yield got


async def test_an_answer_after_suspending_goes_to_its_post_with_no_stream(taken: list[str]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = session_of(app, headers)
        taken.clear()
        async with _posting(client, url, headers, call("hold", {"text": "h"}, rid=3)) as got:
            await tools.entered.wait()
            assert list(session.streams) == [session.get_stream.id]  # no stream made for it
            [pending] = session.exchanges()
            assert isinstance(pending, Pending)
            assert pending._deadline is not None
            assert pending._deadline[1] is not None
            assert pending.lane not in _idle_lanes(session)  # its lane is not idle while it runs
            assert session.router.busy(3)  # the id is in flight: a POST reusing it is refused
            tools.gate.set()
        assert got[0].status_code == 200
        assert got[0].headers["content-type"] == "application/json"
        assert got[0].headers["mcp-session-id"] == session.id
        assert got[0].json() == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"content": [{"type": "text", "text": "h"}]},
        }
        assert taken == ["_Abandoned"]
        assert pending._deadline is not None
        assert pending._deadline[1] is None
        assert app.posts.admission.running == 0
        assert session.exchanges() == []
        assert not session.router.busy(3)
        idle = _idle_lanes(session)
        assert idle.count(pending.lane) == 1  # back in its pool, once
        assert list(session.streams) == [session.get_stream.id]
        # the lane answers the next POST (taken from the pool: no new one)
        again = await client.post(url, json=call("hold", {"text": "n"}, rid=3), headers=headers)
        assert again.json()["result"]["content"] == [{"type": "text", "text": "n"}]
        assert _idle_lanes(session).count(pending.lane) == 1


async def _out_of_order(
    tools: Tools, client: httpx.AsyncClient, url: str, headers: dict[str, str], first_id: int
) -> tuple[Any, Any]:
    """`hold` then `other` POSTed on one session, `other` answered first; the two answers' bodies."""
    tools.gate, tools.other_gate = anyio.Event(), anyio.Event()
    tools.entered, tools.other_entered = anyio.Event(), anyio.Event()
    async with _posting(client, url, headers, call("hold", {"text": "first"}, rid=first_id)) as first:
        await tools.entered.wait()
        async with _posting(
            client, url, headers, call("other", {"text": "second"}, rid=first_id + 1)
        ) as second:
            await tools.other_entered.wait()
            tools.other_gate.set()  # the later POST is answered first
        assert not first  # still waiting for its own answer
        tools.gate.set()
    return first[0].json(), second[0].json()


async def test_two_posts_on_one_session_answered_out_of_order_each_get_their_own(taken: list[str]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = session_of(app, headers)
        await _out_of_order(tools, client, url, headers, 30)  # two lanes in the pool for the next two
        taken.clear()
        first, second = await _out_of_order(tools, client, url, headers, 40)
        assert taken == ["_Abandoned", "_Abandoned"]
        assert second == {
            "jsonrpc": "2.0",
            "id": 41,
            "result": {"content": [{"type": "text", "text": "second"}]},
        }
        assert first == {
            "jsonrpc": "2.0",
            "id": 40,
            "result": {"content": [{"type": "text", "text": "first"}]},
        }
        assert app.posts.admission.running == 0
        assert session.exchanges() == []
        assert list(session.streams) == [session.get_stream.id]
        idle = _idle_lanes(session)
        assert len(idle) == len({id(lane) for lane in idle}) >= 2  # each lane back once


async def test_a_log_after_suspending_makes_the_stream_and_switches_to_sse(taken: list[str]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = session_of(app, headers)
        taken.clear()
        async with _posting(client, url, headers, call("late_log", rid=5)) as got:
            await tools.entered.wait()
            assert list(session.streams) == [session.get_stream.id]
            tools.gate.set()
        assert got[0].headers["content-type"].startswith("text/event-stream")
        sent = messages(got[0].text)
        assert [m.get("method") for m in sent] == ["notifications/message", None]
        assert sent[1]["id"] == 5
        assert sent[1]["result"]["content"] == [{"type": "text", "text": "logged"}]
        assert taken == ["_Abandoned"]
        assert app.posts.admission.running == 0
        assert list(session.streams) == [session.get_stream.id]  # the stream made for it is forgotten


async def test_a_log_to_a_client_that_takes_only_json_is_dropped_and_the_answer_comes(
    taken: list[str],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, session_headers):
        session = session_of(app, session_headers)
        headers = {**session_headers, "accept": "application/json"}
        taken.clear()
        async with _posting(client, url, headers, call("late_log", rid=6)) as got:
            await tools.entered.wait()
            tools.gate.set()
        assert got[0].headers["content-type"] == "application/json"
        assert got[0].json() == {
            "jsonrpc": "2.0",
            "id": 6,
            "result": {"content": [{"type": "text", "text": "logged"}]},
        }
        assert taken == ["_Abandoned"]
        assert app.posts.admission.running == 0
        assert list(session.streams) == [session.get_stream.id]


async def test_its_session_ending_while_its_stream_is_walked_answers_once_without_touching_the_walk(
    taken: list[str],
) -> None:
    """A JSON-only client's handler that logged before suspending has a stream (made for the log, which is
    dropped): `HttpSession.close` walks its streams and ends each; the answer this gives must not change the
    dict walked (the exchange's own end forgets the stream)."""
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, session_headers):
        session = session_of(app, session_headers)
        headers = {**session_headers, "accept": "application/json"}
        taken.clear()
        async with _posting(client, url, headers, call("log_first", {"text": "w"}, rid=14)) as got:
            await tools.entered.wait()
            await until(lambda: len(session.streams) == 2)  # the GET stream and the one the log made
            for stream in session.streams.values():  # as `HttpSession.close` does
                stream.finish()
        assert (got[0].status_code, got[0].content) == (202, b"")  # JSON only: no SSE to end empty
        assert taken == ["_Abandoned"]
        tools.gate.set()
        with anyio.fail_after(10):
            await until(lambda: app.posts.admission.running == 0)
        assert list(session.streams) == [session.get_stream.id]


async def test_a_cancel_from_the_client_cancels_the_handler_once_and_ends_its_post_empty(
    taken: list[str],
) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = session_of(app, headers)
        taken.clear()
        async with _posting(client, url, headers, call("hold", {"text": "c"}, rid=8)) as got:
            await tools.entered.wait()
            [pending] = session.exchanges()
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}}
            assert (await client.post(url, json=cancel, headers=headers)).status_code == 202
        assert (got[0].status_code, got[0].content) == (200, b"")
        assert got[0].headers["content-type"] == "text/event-stream"  # never 202 for a request
        assert pending._deadline is not None
        assert pending._deadline[1] is None
        with anyio.fail_after(10):
            await until(lambda: tools.cancelled == 1)
        assert (tools.cancelled, tools.finished) == (1, 0)
        assert taken[0] == "_Abandoned"
        assert app.posts.admission.running == 0
        assert pending.lane not in _idle_lanes(session)  # a cancelled request's lane is not reused
        tools.gate.set()
        again = await client.post(url, json=call("echo", {"text": "again"}, rid=8), headers=headers)
        assert again.json()["result"]["content"] == [{"type": "text", "text": "again"}]
        assert tools.cancelled == 1


async def test_a_client_that_leaves_while_suspended_cancels_the_handler_once(taken: list[str]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = session_of(app, headers)
        host, port = url.split("/")[2].split(":")
        taken.clear()
        with anyio.fail_after(10):
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw_post(url, headers, call("hold", {"text": "x"}, rid=10)))
            await tools.entered.wait()
            [pending] = session.exchanges()
            writer.close()
            await until(lambda: tools.cancelled == 1 and app.posts.admission.running == 0)
            await until(lambda: pending.closed)
        assert taken == ["_Abandoned"]
        assert (tools.finished, tools.cancelled) == (0, 1)
        assert pending.lane not in _idle_lanes(session)
        assert session.exchanges() == []
        assert not session.router.busy(10)
        tools.gate.set()
        again = await client.post(url, json=call("hold", {"text": "y"}, rid=10), headers=headers)
        assert again.json()["result"]["content"] == [{"type": "text", "text": "y"}]
        assert tools.cancelled == 1


async def test_its_session_deleted_while_suspended_ends_it_once(taken: list[str]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        taken.clear()
        async with _posting(client, url, headers, call("hold", {"text": "d"}, rid=9)) as got:
            await tools.entered.wait()
            assert (await client.delete(url, headers=headers)).status_code == 200
        # no answer came, its session ended: said with an error (the answer was still awaited as JSON)
        assert (got[0].status_code, got[0].headers["content-type"]) == (200, "application/json")
        assert got[0].json()["error"] == {"code": jsonrpc.CONNECTION_CLOSED, "message": session_ended_text(9)}
        assert (tools.cancelled, tools.finished) == (1, 0)
        assert taken == ["_Abandoned"]
        assert app.posts.admission.running == 0


async def test_no_answer_within_stream_after_switches_to_sse(taken: list[str]) -> None:
    """`stream_after=0`: the deadline runs out while the handler waits on its gate (nothing else can
    answer it first), and the answer switches to SSE, the rest of it on the stream made then."""
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=0) as (url, app, client, headers):
        session = session_of(app, headers)
        taken.clear()
        with anyio.fail_after(10):
            response = await post_streamed(client, url, headers, call("hold", {"text": "s"}, rid=13))
            try:
                assert response.headers["content-type"].startswith("text/event-stream")
                assert len(session.streams) == 2  # made by the switch
                tools.gate.set()
                text = (await response.aread()).decode()
            finally:
                await response.aclose()
            await until(lambda: app.posts.admission.running == 0)
        answer = next(m for m in messages(text) if m.get("id") == 13)
        assert answer["result"]["content"] == [{"type": "text", "text": "s"}]
        assert taken == ["_Abandoned"]
        assert (tools.cancelled, tools.finished) == (0, 1)


async def test_a_modern_request_that_suspends_is_answered_json_with_no_stream(
    taken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    real = fast_pending.Stream

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fast_pending, "Stream", counted)  # one made for a `Pending` exchange
    tools = Tools()
    headers = {**JSON_AND_SSE, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "hold"}
    async with (
        live_app(tools, response_mode="auto", stream_after=LONG) as (url, app),
        httpx.AsyncClient(timeout=10) as client,
    ):
        # a first call leaves an idle stateless lane in the pool: the fast path takes the next ones
        tools.gate.set()
        warm = await client.post(
            url, json=call("hold", {"text": "w"}, rid=1, **modern_meta()), headers=headers
        )
        assert warm.json()["result"]["content"] == [{"type": "text", "text": "w"}]
        tools.gate = anyio.Event()
        tools.entered = anyio.Event()
        taken.clear()
        async with _posting(client, url, headers, call("hold", {"text": "m"}, rid=2, **modern_meta())) as got:
            await tools.entered.wait()
            tools.gate.set()
        assert got[0].headers["content-type"] == "application/json"
        assert got[0].json()["id"] == 2
        assert got[0].json()["result"]["content"] == [{"type": "text", "text": "m"}]
        assert taken == ["_Abandoned"]
        assert made == []  # no stream was made for it
        assert app.posts.admission.running == 0


async def test_a_server_stopping_while_a_call_is_suspended_answers_it_with_an_error(taken: list[str]) -> None:
    """The stop cuts the handler once its grace (0 here) is over: the -32000 answer goes to the POST as
    JSON, straight from the light path."""
    tools = Tools()
    ready: list[str] = []
    started = anyio.Event()
    stopped = anyio.Event()
    serving_scope = anyio.CancelScope()

    def on_ready(url: str) -> None:
        ready.append(url)
        started.set()

    async def serve() -> None:
        with serving_scope:
            options = HttpOptions(response_mode="auto", stream_after=LONG)
            await serve_http(
                tools.server, port=0, options=options, ready=on_ready, http_server="mcpframe", grace=0
            )
        stopped.set()

    async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=30) as client:
        tg.start_soon(serve)
        with anyio.fail_after(10):
            await started.wait()
        url = ready[0]
        headers = await open_session(client, url)
        await client.post(url, json=call("echo", {"text": "w"}, rid=1), headers=headers)  # a lane in the pool
        taken.clear()
        with anyio.fail_after(30):
            async with _posting(client, url, headers, call("hold", {"text": "x"}, rid=5)) as got:
                await tools.entered.wait()
                serving_scope.cancel()
            await stopped.wait()
    assert got[0].headers["content-type"] == "application/json"
    answer = got[0].json()
    assert answer["id"] == 5
    assert answer["error"]["code"] == -32000
    assert answer["error"]["message"].startswith("Server shutting down")
    assert taken == ["_Abandoned"]
    assert (tools.cancelled, tools.finished) == (1, 0)


async def test_a_failure_while_making_its_pending_leaves_nothing_taken(
    taken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug while the `Pending` is made (here its timer) costs that POST (500), not the server: no id
    left owned, the admission given back, and the next POST on the session answered."""
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = session_of(app, headers)

        def broken(*args: object) -> object:
            raise RuntimeError("timer broken")

        with monkeypatch.context() as patch:
            patch.setattr(fast_pending.Deadlines, "of", broken)
            async with _posting(client, url, headers, call("hold", {"text": "x"}, rid=21)) as got:
                await tools.entered.wait()
                tools.gate.set()
        assert got[0].status_code == 500
        assert not session.router.busy(21)
        with anyio.fail_after(10):
            await until(lambda: app.posts.admission.running == 0)
        again = await client.post(url, json=call("echo", {"text": "after"}, rid=22), headers=headers)
        assert again.json()["result"]["content"] == [{"type": "text", "text": "after"}]
