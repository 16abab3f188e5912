"""The listening proxy's fast path on the lean HTTP server (`proxy/listen_fast.py`), in front of the scripted
peer: what it takes and answers whole (SSE with its priming event, or JSON), what it hands to the full path
(a notification during the call, a hold that ran out), cancellation, a child that dies, what it declines,
the child write that never queues behind a full pipe, and the child's stdout read by `ChildOutput`."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import BOTH, JSON_ONLY, Proxy, child_env, open_session, rpc

from mcpframe.http.wire import Parked
from mcpframe.proxy.listen_bridge import FastRoute, SessionBridge
from mcpframe.proxy.listen_output import HIGH_WATER, LOW_WATER, ChildOutput
from mcpframe.proxy.pool import ChildPool

pytestmark = pytest.mark.anyio


def _events(body: str) -> list[dict[str, str]]:
    """SSE events as field dicts (`data` joined)."""
    events = []
    for block in body.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        if fields:
            events.append(fields)
    return events


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await anyio.sleep(0.005)


def _fast_routes(proxy: Proxy) -> list[FastRoute]:
    bridges = [s.connection for s in proxy.app.sessions.sessions.values()]
    return [
        r
        for b in bridges
        if isinstance(b, SessionBridge)
        for r in b.pending.values()
        if isinstance(r, FastRoute)
    ]


async def test_a_plain_call_is_answered_whole_with_the_priming_event_and_the_answer(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = await open_session(http, proxy.url)
    response = await http.post(proxy.url, json=rpc(7, "echo", {"x": 1}), headers={**BOTH, **headers})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["mcp-session-id"] == headers["mcp-session-id"]
    assert "content-length" in response.headers  # written whole, not streamed
    priming, answer = _events(response.text)
    assert "retry" in priming
    assert priming["id"]
    assert answer["id"]
    assert json.loads(answer["data"]) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"params": {"x": 1}, "initializations": 1},
    }
    assert proxy.app.fast.taken == 1
    assert proxy.app.posts.admission.running == 0
    resume = {"accept": "text/event-stream", "last-event-id": priming["id"], **headers}
    replayed = await http.get(proxy.url, headers=resume)  # the events were stored, the priming one first
    assert _events(replayed.text) == [answer]


async def test_a_json_only_client_gets_the_childs_bytes_as_json(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = await open_session(http, proxy.url)
    for rid in ("a", 2**64 + 1):  # ids come back as the client wrote them (the child's own bytes)
        body = b'{"jsonrpc":"2.0","id":%s,"method":"echo","params":{}}' % json.dumps(rid).encode()
        response = await http.post(proxy.url, content=body, headers={**JSON_ONLY, **headers})
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert b'"id": %s' % json.dumps(rid).encode() in response.content
    assert proxy.app.fast.taken == 2


async def test_a_notification_during_the_call_goes_on_the_full_path(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = await open_session(http, proxy.url)
    log = ["notifications/message", {"level": "info", "data": "working"}]
    call = rpc(3, "notify", {"notifications": [log]})
    response = await http.post(proxy.url, json=call, headers={**BOTH, **headers})
    assert response.status_code == 200
    # the full path's SSE response: the notification, then the answer (the fast path carries only answers)
    frames = [json.loads(e["data"]) for e in _events(response.text) if e.get("data")]
    assert [f.get("method", f.get("id")) for f in frames] == ["notifications/message", 3]
    json_only = await http.post(proxy.url, json={**call, "id": 4}, headers={**JSON_ONLY, **headers})
    assert json_only.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}  # as the full path answers it
    assert proxy.app.fast.taken == 2
    assert proxy.app.posts.admission.running == 0


async def test_a_call_past_its_hold_opens_its_sse_stream_and_a_cancel_ends_it(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = await open_session(http, proxy.url)
    with anyio.fail_after(10):
        async with http.stream(
            "POST", proxy.url, json=rpc(5, "slow"), headers={**BOTH, **headers}
        ) as response:
            # the peer never answers `slow`: headers arrive because the hold ran out and the stream opened
            assert response.status_code == 200
            assert "content-length" not in response.headers
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
            assert (await http.post(proxy.url, json=cancel, headers={**BOTH, **headers})).status_code == 202
            await response.aread()  # the stream ends: its request was cancelled
    assert proxy.app.fast.taken == 1
    assert proxy.app.posts.admission.running == 0


async def test_a_cancelled_json_call_is_answered_202(proxy: Proxy, http: httpx.AsyncClient) -> None:
    headers = await open_session(http, proxy.url)
    got: list[httpx.Response] = []

    async def slow() -> None:
        got.append(await http.post(proxy.url, json=rpc(9, "slow"), headers={**JSON_ONLY, **headers}))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await _until(lambda: len(_fast_routes(proxy)) == 1)  # JSON only: no hold, it waits as it is
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
            assert (
                await http.post(proxy.url, json=cancel, headers={**JSON_ONLY, **headers})
            ).status_code == 202
    assert got[0].status_code == 202
    assert got[0].headers["mcp-session-id"] == headers["mcp-session-id"]
    assert proxy.app.posts.admission.running == 0


async def test_a_fast_call_given_up_is_cancelled_at_the_child(proxy: Proxy, http: httpx.AsyncClient) -> None:
    headers = await open_session(http, proxy.url)
    get_headers = {"accept": "text/event-stream", **headers}
    with anyio.fail_after(10):
        async with http.stream("GET", proxy.url, headers=get_headers) as stream:
            assert stream.status_code == 200
            parked = proxy.app.fast.post({**JSON_ONLY, **headers}, json.dumps(rpc(7, "slow")).encode())
            assert isinstance(parked, Parked)  # taken: the POST waits for the child's answer
            assert len(_fast_routes(proxy)) == 1
            delivered: list[object] = []
            parked.park(delivered.append)
            parked.give_up()  # as the lean server does with parked answers when it closes
            assert _fast_routes(proxy) == []
            parked.cancel()  # once only
            assert delivered == []
            async for line in stream.aiter_lines():  # the peer reports the cancel it got on the GET stream
                if "test/cancelled" in line:
                    break
    assert json.loads(line.partition(":")[2])["params"] == {"requestId": 7, "known": True}
    assert proxy.app.posts.admission.running == 0


async def test_a_child_that_dies_fails_the_call_it_had(proxy: Proxy, http: httpx.AsyncClient) -> None:
    headers = await open_session(http, proxy.url)
    response = await http.post(
        proxy.url, json=rpc(1, "crash", {"status": 3}), headers={**JSON_ONLY, **headers}
    )
    error = response.json()["error"]
    assert error["code"] == -32000
    assert "status 3" in error["message"]
    assert proxy.app.fast.taken == 1
    again = await http.post(proxy.url, json=rpc(2, "echo"), headers={**JSON_ONLY, **headers})
    assert again.status_code == 404  # the session ended with its child
    headers = await open_session(http, proxy.url)  # SSE preferred: the error is its one event, nothing stored
    response = await http.post(proxy.url, json=rpc(3, "crash", {"status": 4}), headers={**BOTH, **headers})
    events = _events(response.text)
    assert "status 4" in json.loads(events[-1]["data"])["error"]["message"]
    if len(events) == 1:  # answered within the hold (else the full path's stream, priming first)
        assert headers["mcp-session-id"] not in proxy.app.sessions.store._sessions  # type: ignore[union-attr]


async def test_what_the_fast_path_declines_the_full_path_answers(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = {**JSON_ONLY, **await open_session(http, proxy.url)}
    batch = [rpc(1, "echo"), rpc(2, "echo")]  # a 2025-11-25 session: refused as `serve --http` would
    refused = await http.post(proxy.url, json=batch, headers=headers)
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, -32600)
    token = rpc(3, "progress", {"_meta": {"progressToken": "t"}})
    assert (await http.post(proxy.url, json=token, headers=headers)).json()["result"] == {"token_seen": "t"}
    refused = await http.post(
        proxy.url, json=rpc(4, "echo"), headers={**headers, "content-type": "text/plain"}
    )
    assert refused.status_code == 415
    unknown = await http.post(proxy.url, json=rpc(5, "echo"), headers={**headers, "mcp-session-id": "nope"})
    assert unknown.status_code == 404
    assert proxy.app.fast.taken == 0
    got: list[httpx.Response] = []

    async def slow() -> None:
        got.append(await http.post(proxy.url, json=rpc(6, "slow"), headers=headers))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await _until(lambda: len(_fast_routes(proxy)) == 1)
            busy = await http.post(proxy.url, json=rpc(6, "echo"), headers=headers)
            assert busy.status_code == 400  # the id is in flight: declined, refused by the full path
            assert "already in flight" in busy.json()["error"]["message"]
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}}
            await http.post(proxy.url, json=cancel, headers=headers)
    assert proxy.app.fast.taken == 1


async def test_write_now_never_writes_behind_bytes_the_child_has_not_read() -> None:
    pool = ChildPool([sys.executable, "-c", "import time; time.sleep(60)"], env=child_env())
    child = await pool.spawn()
    try:
        assert child.write_now(b"x" * (1 << 20))  # more than a pipe holds: the rest waits in the transport
        assert not child.write_now(b"y\n")  # so the next write goes through `write`, which waits
    finally:
        child.process.kill()
        with anyio.fail_after(10):
            await child.close()
    assert child.returncode is not None
    assert child.returncode != 0


class _Pipe(asyncio.ReadTransport):
    """A read transport that only records pausing."""

    def __init__(self) -> None:
        super().__init__()
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def _frame(rid: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % rid


async def test_child_output_stops_reading_while_its_reader_lags_and_keeps_order() -> None:
    output, pipe = ChildOutput(), _Pipe()
    output.connection_made(pipe)
    many = HIGH_WATER + 10
    output.data_received(b"".join(_frame(i) for i in range(many)))  # before anyone reads
    frames = output.frames(max_frame=1 << 20)
    seen = [(await anext(frames)).id]
    assert pipe.paused  # a full queue: the child's stdout is not read
    while pipe.paused:
        seen.append((await anext(frames)).id)
    assert many - len(seen) < LOW_WATER  # read again once the reader caught up
    taken: list[Any] = []
    output.take = lambda item: item.id == "x" and not taken.append(item.id)
    note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}\n'
    output.data_received(note + b'{"jsonrpc":"2.0","id":"x","result":{}}\n')  # behind a queued frame
    assert taken == []
    output.connection_lost(None)
    seen += [getattr(item, "id", None) async for item in frames]
    assert seen == [*range(many), None, "x"]  # in order, nothing taken past a frame still waiting
    fresh = ChildOutput()
    fresh.connection_made(_Pipe())
    fresh.take = output.take
    later = fresh.frames(max_frame=1 << 20)
    fresh.data_received(b"")
    waiting = asyncio.ensure_future(anext(later))
    await asyncio.sleep(0)  # the reader waits on an empty queue
    fresh.data_received(b'{"jsonrpc":"2.0","id":"x","result":{}}\n')
    assert taken == ["x"]  # nothing waited before it: placed at once
    fresh.connection_lost(None)
    with pytest.raises(StopAsyncIteration):
        await waiting


async def test_host_origin_and_media_are_checked_on_every_post_after_allowed_ones(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = {**JSON_ONLY, **await open_session(http, proxy.url)}
    assert (await http.post(proxy.url, json=rpc(1, "echo"), headers=headers)).status_code == 200
    assert proxy.app.fast.taken == 1  # its Host, Origin and media types are remembered as allowed
    bad_host = await http.post(proxy.url, json=rpc(2, "echo"), headers={**headers, "host": "evil.example"})
    assert bad_host.status_code == 421
    origin = {**headers, "origin": "http://evil.example"}
    assert (await http.post(proxy.url, json=rpc(3, "echo"), headers=origin)).status_code == 403
    not_json = {**headers, "content-type": "text/plain"}
    assert (await http.post(proxy.url, json=rpc(4, "echo"), headers=not_json)).status_code == 415
    no_accept = {**headers, "accept": "text/html"}
    assert (await http.post(proxy.url, json=rpc(5, "echo"), headers=no_accept)).status_code == 406
    assert (await http.post(proxy.url, json=rpc(6, "echo"), headers=headers)).status_code == 200
    assert proxy.app.fast.taken == 2


async def test_junk_media_values_do_not_fill_the_remembered_pairs(proxy: Proxy) -> None:
    fast = proxy.app.fast
    body = json.dumps(rpc(1, "echo")).encode()
    junk_accept = "application/json, " + "x/y;q=0.1, " * 3000  # ~33 KB: a head passes the Host guard
    for n in range(300):  # no session needed: the media types are checked first
        assert fast.post({"content-type": "application/json", "accept": junk_accept + str(n)}, body) is None
    assert sum(len(a or "") + len(c or "") for c, a in fast._media_ok) < 300 * 256 * 2
    assert fast.post(JSON_ONLY, body) is None  # declined (no session), its media types remembered
    assert (JSON_ONLY["content-type"], JSON_ONLY["accept"]) in fast._media_ok


def _raw_post(url: str, headers: dict[str, str], body: bytes) -> tuple[str, int, bytes]:
    """The host, port and bytes of a POST to `url`, for a client on a socket of its own."""
    parts = httpx.URL(url)
    assert parts.port is not None
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    head = f"POST {parts.path} HTTP/1.1\r\nhost: {parts.host}:{parts.port}\r\n{lines}"
    return parts.host, parts.port, head.encode() + b"content-length: %d\r\n\r\n%s" % (len(body), body)


async def test_a_client_that_leaves_while_parked_frees_its_slot_and_the_child_is_told(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = await open_session(http, proxy.url)
    get_headers = {"accept": "text/event-stream", **headers}
    with anyio.fail_after(10):
        async with http.stream("GET", proxy.url, headers=get_headers) as stream:
            assert stream.status_code == 200
            session = proxy.app.sessions.sessions[headers["mcp-session-id"]]
            before = session.open_requests
            host, port, request = _raw_post(
                proxy.url, {**JSON_ONLY, **headers}, json.dumps(rpc(7, "slow")).encode()
            )
            _, writer = await asyncio.open_connection(host, port)
            writer.write(request)
            await _until(lambda: len(_fast_routes(proxy)) == 1)  # JSON only: parked with no hold
            assert proxy.app.posts.admission.running == 1
            writer.close()  # the client leaves before the child answers
            await _until(lambda: proxy.app.posts.admission.running == 0)
            assert _fast_routes(proxy) == []
            after = session.open_requests
            async for line in stream.aiter_lines():  # the peer reports the cancel it got on the GET stream
                if "test/cancelled" in line:
                    break
    assert json.loads(line.partition(":")[2])["params"] == {"requestId": 7, "known": True}
    assert proxy.app.posts.admission.running == 0
    assert after == before  # the POST's count of open requests on the session was undone once


async def _response(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """The head and body of the next response on a raw connection (with a content-length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return head, await reader.readexactly(length)


async def test_a_session_deleted_while_its_post_is_parked_answers_it_once(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = await open_session(http, proxy.url)
    host, port, request = _raw_post(proxy.url, {**JSON_ONLY, **headers}, json.dumps(rpc(7, "slow")).encode())
    with anyio.fail_after(10):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(request)
        await _until(lambda: len(_fast_routes(proxy)) == 1)  # JSON only: parked with no hold
        assert (await http.delete(proxy.url, headers=headers)).status_code == 200
        head, body = await _response(reader)
        assert head.startswith(b"HTTP/1.1 200 ")
        assert json.loads(body)["error"]["code"] == -32000
        writer.write(_raw_post(proxy.url, {**JSON_ONLY, **headers}, json.dumps(rpc(8, "echo")).encode())[2])
        head, _ = await _response(reader)  # the next response on the connection is the next request's
        assert head.startswith(b"HTTP/1.1 404 ")  # the session is gone
        writer.close()
    assert proxy.app.posts.admission.running == 0
    assert _fast_routes(proxy) == []
