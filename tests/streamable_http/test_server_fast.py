"""The lean server's fast path (`http/fast.py`, `StreamableHTTPServer.wire_fast`): which POSTs take it,
and that every POST, taken or not, gets the answer the full ASGI path gives."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from mcpframe.http import fast as fast_module
from mcpframe.http import streams
from mcpframe.http.exchange import Exchange
from mcpframe.http.responses import Reply
from mcpframe.http.server import HttpOptions
from mcpframe.http.wire_parts import Parked
from mcpframe.session import eager

from ._server_support import (
    JSON_AND_SSE,
    answer,
    asgi_client,
    call,
    initialize,
    make_server,
    messages,
    modern_meta,
    open_session,
    served,
    sse_events,
)
from ._server_support import session_headers as headers_of

pytestmark = pytest.mark.anyio


WHOLE = "whole" if eager.AVAILABLE else "deferred"
"""What the fast path makes of an answer ready in its handler's first step: written whole where handlers
start eagerly; without an eager start (3.11 with ``MCPFRAME_PUBLIC_ONLY=1``) that first step is a task that
runs after the POST was read, so its answer comes later (the same answer, from an Exchange)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What `fast_post` made of each POST it was asked: "whole" (a `Reply`, or the `Whole` a JSON answer
    given at once is written as), "deferred" (a JSON answer that comes later, `Parked`), "later"
    (finished by the full path's `respond`) or "declined"."""
    seen: list[str] = []
    real = fast_module.fast_post

    def recorded(posts: Any, headers: dict[str, str], data: bytes) -> Any:
        got = real(posts, headers, data)
        kind = (
            "whole" if isinstance(got, Reply | tuple) else "deferred" if isinstance(got, Parked) else "later"
        )
        seen.append("declined" if got is None else kind)
        return got

    monkeypatch.setattr(fast_module, "fast_post", recorded)
    return seen


@contextlib.asynccontextmanager
async def lean(**options: Any) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """The lean HTTP/1.1 server on 127.0.0.1 in this loop (the test server plus `async def aecho`), and
    a client; yields (endpoint URL, client)."""
    server = make_server()

    @server.tool
    async def aecho(text: str) -> str:
        return text

    @server.tool
    async def nap(text: str) -> str:
        await anyio.sleep(0)  # suspends once: answered after the first step
        return text

    async with (
        served(server, options=HttpOptions(**options), http_server="mcpframe") as url,
        httpx.AsyncClient() as client,
    ):
        yield url, client


async def test_a_plain_call_is_answered_whole_on_the_fast_path(taken: list[str]) -> None:
    async with lean(response_mode="auto") as (url, client):
        headers = await open_session(client, url)
        taken.clear()
        for rid, tool in ((2, "aecho"), (3, "aecho"), (4, "echo")):
            response = await client.post(url, json=call(tool, {"text": f"t{rid}"}, rid=rid), headers=headers)
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/json"
            assert response.headers["mcp-session-id"] == headers["mcp-session-id"]
            assert response.json() == {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"content": [{"type": "text", "text": f"t{rid}"}]},
            }
        # a `def` tool runs on the worker pool: its answer comes after the first step
        assert taken == [WHOLE, WHOLE, "deferred"]


async def test_an_answer_in_the_first_step_makes_no_exchange_and_a_later_one_gets_it_handed_over(
    taken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    real = Exchange

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return real(*args, **kwargs)

    real_pending = fast_module.Pending  # an `Exchange` too: a JSON answer's, made with no stream

    def counted_pending(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return real_pending(*args, **kwargs)

    monkeypatch.setattr(fast_module, "Exchange", counted)
    monkeypatch.setattr(fast_module, "Pending", counted_pending)
    async with lean(response_mode="auto") as (url, client):
        headers = await open_session(client, url)
        taken.clear()
        for rid, tool in ((2, "aecho"), (3, "nap"), (4, "aecho"), (5, "nap"), (6, "echo")):
            response = await client.post(url, json=call(tool, {"text": tool}, rid=rid), headers=headers)
            assert response.headers["content-type"] == "application/json"
            assert response.json()["id"] == rid
            assert response.json()["result"]["content"][0]["text"] == tool
        assert taken == [WHOLE, "deferred", WHOLE, "deferred", "deferred"]
        assert len(made) == taken.count("deferred")  # one per POST handed over, none for whole answers


async def test_a_handler_that_logs_is_finished_by_the_full_path_with_sse(taken: list[str]) -> None:
    async with lean(response_mode="auto") as (url, client):
        headers = await open_session(client, url)
        taken.clear()
        response = await client.post(url, json=call("chatty", rid=5), headers=headers)
        assert taken == ["deferred"]  # its log switches it to SSE
        assert response.headers["content-type"].startswith("text/event-stream")
        got = messages(response.text)
        assert [m.get("method") for m in got] == ["notifications/message", None]
        assert got[1]["id"] == 5
        assert got[1]["result"]["content"][0]["text"] == "done"


async def test_a_progress_token_is_declined_and_answered_as_before(taken: list[str]) -> None:
    async with lean(response_mode="auto") as (url, client):
        headers = await open_session(client, url)
        taken.clear()
        response = await client.post(url, json=call("chatty", rid=6, progressToken="p"), headers=headers)
        assert taken == ["declined"]
        got = messages(response.text)
        methods = ["notifications/progress", "notifications/message", "notifications/progress", None]
        assert [m.get("method") for m in got] == methods
        assert answer(response)["result"]["content"][0]["text"] == "done"


async def test_resumable_answers_are_stored_and_replayed_as_before(taken: list[str]) -> None:
    async with lean(response_mode="resumable") as (url, client):
        headers = await open_session(client, url)
        taken.clear()
        for rid, tool in ((7, "aecho"), (8, "echo")):
            response = await client.post(url, json=call(tool, {"text": tool}, rid=rid), headers=headers)
            assert response.headers["content-type"].startswith("text/event-stream")
            events = sse_events(response.text)
            assert [sorted(e) for e in events] == [["data", "id", "retry"], ["data", "event", "id"]]
            assert events[0]["data"] == ""  # the priming event, then the answer: both stored
            assert events[1]["id"].split(".")[0] == events[0]["id"].split(".")[0]
            assert answer(response)["result"]["content"][0]["text"] == tool
            # the stored answer is replayed after the priming event (`Last-Event-ID`)
            replay = {**headers, "accept": "text/event-stream", "last-event-id": events[0]["id"]}
            again = await client.get(url, headers=replay)
            assert messages(again.text) == messages(response.text)
        # an `async def` answer in the first step: whole (SSE is answered by the full path otherwise)
        assert taken == ["whole" if eager.AVAILABLE else "later", "later"]


def _modern(tool: str, rid: int, text: str, mcp_name: str | None = None) -> tuple[Any, dict[str, str]]:
    body = call(tool, {"text": text}, rid=rid, **modern_meta())
    headers = {**JSON_AND_SSE, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
    return body, {**headers, "mcp-name": mcp_name or tool}


async def test_stateless_requests_take_the_fast_path_and_mismatches_are_declined(taken: list[str]) -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        body, headers = _modern("echo", 21, "m", mcp_name="other")
        want = await client.post("/mcp", json=body, headers=headers)
    async with lean(response_mode="auto") as (url, client):
        for rid in (22, 23):  # the first one makes the stateless lane the second one finds idle
            body, headers = _modern("aecho", rid, f"s{rid}")
            response = await client.post(url, json=body, headers=headers)
            assert response.status_code == 200
            assert response.json()["result"]["content"] == [{"type": "text", "text": f"s{rid}"}]
            assert "mcp-session-id" not in response.headers
        assert taken == ["declined", WHOLE]
        taken.clear()
        body, headers = _modern("echo", 21, "m", mcp_name="other")
        got = await client.post(url, json=body, headers=headers)
        assert taken == ["declined"]
        assert (got.status_code, got.json()) == (want.status_code, want.json())
        assert got.status_code == 400


# Declined POSTs: each gets, over the lean server, what the ASGI app answers in-process.
_BATCH = [call("echo", {"text": "a"}, rid=11), call("echo", {"text": "b"}, rid=12)]
_DECLINED: dict[str, tuple[Any, dict[str, str]]] = {
    "batch": (_BATCH, {}),
    "wrong origin": (call("echo", {"text": "o"}, rid=13), {"origin": "http://evil.example"}),
    "wrong host": (call("echo", {"text": "h"}, rid=14), {"host": "evil.example"}),
    "unknown session": (call("echo", {"text": "u"}, rid=15), {"mcp-session-id": "nope"}),
    "bad version": (call("echo", {"text": "v"}, rid=16), {"mcp-protocol-version": "1999-01-01"}),
    "not json": (call("echo", {"text": "j"}, rid=17), {"content-type": "text/plain"}),
    "notification": ({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, {}),
    "initialize again": ({**call("echo", rid=18), "method": "initialize"}, {}),
}


async def _post(client: httpx.AsyncClient, url: str, headers: dict[str, str], case: str) -> tuple[int, Any]:
    body, extra = _DECLINED[case]
    response = await client.post(url, content=json.dumps(body), headers={**headers, **extra})
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        got = response.json()
        if isinstance(got, list):  # a batch's answers come in the order its handlers finish
            got = sorted(got, key=lambda answer: answer["id"])
        return response.status_code, got
    return response.status_code, messages(response.text) if kind.startswith("text/event-stream") else b""


async def test_declined_posts_get_the_full_paths_answers(taken: list[str]) -> None:
    want: dict[str, tuple[int, Any]] = {}
    async with asgi_client(response_mode="auto") as (client, _):
        headers = headers_of(await initialize(client, "2025-03-26"), "2025-03-26")  # batches allowed
        for case in _DECLINED:
            want[case] = await _post(client, "/mcp", headers, case)
    async with lean(response_mode="auto") as (url, client):
        headers = await open_session(client, url, "2025-03-26")
        port_host = {"host": url.split("/")[2]}
        for case in _DECLINED:
            taken.clear()
            extra = {} if case == "wrong host" else port_host
            got = await _post(client, url, {**headers, **extra}, case)
            assert got == want[case], case
            assert taken in ([], ["declined"]), case  # refused by the shared checks, or declined after
    assert want["wrong origin"][0] == 403
    assert want["wrong host"][0] == 421
    assert want["unknown session"][0] == 404
    assert [m["id"] for m in want["batch"][1]] == [11, 12]


def test_stream_ids_are_unique_hex_and_a_forked_child_draws_its_own() -> None:
    ids = [streams.new_stream_id() for _ in range(600)]  # more than one batch of 256
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 24 and int(i, 16) >= 0 and "." not in i for i in ids)
    before = streams._Ids.batch
    streams._Ids.forget()  # what `os.register_at_fork` runs in a child
    assert streams.new_stream_id() not in ids
    assert streams._Ids.batch != before


async def test_remembered_header_pairs_let_through_only_what_was_checked(taken: list[str]) -> None:
    """The fast path remembers the (Host, Origin) and (Content-Type, Accept) pairs it allowed: another
    pair, after a call that filled those memories, is still checked and refused as the full path does."""
    async with lean(response_mode="auto") as (url, client):
        headers = await open_session(client, url)
        host = url.split("/")[2]
        taken.clear()
        refused = {
            406: {"accept": "text/html"},
            415: {"content-type": "text/plain"},
            421: {"host": "evil.example"},
            403: {"origin": "http://evil.example"},
        }
        for status, extra in refused.items():
            ok = await client.post(url, json=call("aecho", {"text": "ok"}), headers={**headers, "host": host})
            assert ok.status_code == 200
            response = await client.post(
                url, json=call("aecho", {"text": "no"}), headers={**headers, **extra}
            )
            assert response.status_code == status, extra
        # the media types are refused by the full path after `fast_post` declined; Host and Origin before
        assert taken == [WHOLE, "declined", WHOLE, "declined", WHOLE, WHOLE]


def test_junk_media_values_are_never_remembered_and_a_normal_pair_still_is() -> None:
    remembered: dict[tuple[str | None, str | None], Any] = {}
    junk_accept = "application/json, " + "x/y;q=0.1, " * 3000  # ~33 KB, let through by `refusal_of`
    for n in range(300):  # more than the pairs remembered: each would hold its ~33 KB for good
        junk = {"content-type": "application/json", "accept": junk_accept + str(n)}
        accepts = fast_module.media_accepts(junk, remembered)
        assert accepts is not None
        assert accepts.json  # still let through, parsed each time
        junk_type = {
            "content-type": "application/json; x=" + "y" * 30000 + str(n),
            "accept": "text/event-stream",
        }
        assert fast_module.media_accepts(junk_type, remembered) is not None
    assert sum(len(a or "") + len(c or "") for c, a in remembered) == 0
    normal = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    accepts = fast_module.media_accepts(normal, remembered)
    assert accepts is not None
    assert remembered == {("application/json", "application/json, text/event-stream"): accepts}
    refused = {"content-type": "text/plain", "accept": "application/json"}
    assert fast_module.media_accepts(refused, remembered) is None
    assert len(remembered) == 1  # a refused pair is never remembered
