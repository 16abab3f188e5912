"""The listening proxy's fast path made leaner (session 34): an id 0 is still told from `-0` (only a 0 is
scanned for `-0`), a fast SSE answer's two events are stored at once (`MemoryEventStore.store_answer_now`)
and replay as before, and an open fast request keeps its session from the reaper."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from tests.proxy._listen_support import BOTH, JSON_ONLY, Proxy, in_process_proxy, open_session
from tests.proxy.conftest import PEER

from mcpframe import core
from mcpframe.http.events import MemoryEventStore

pytestmark = pytest.mark.anyio


def _events(body: bytes) -> list[dict[str, str]]:
    events = []
    for block in body.decode().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        if fields:
            events.append(fields)
    return events


def _request(body: bytes) -> tuple[object, str, bytes] | None:
    return core.plain_call(body, 1 << 20)


@pytest.mark.parametrize(
    ("body", "taken"),
    [
        (b'{"jsonrpc":"2.0","id":0,"method":"echo","params":{"a":"-0"}}', True),
        (b'{"jsonrpc":"2.0","id":-0,"method":"echo","params":{}}', False),
        (b'{"jsonrpc":"2.0","id":-0.0,"method":"echo","params":{}}', False),
        (b'{"jsonrpc":"2.0","id":10,"method":"echo","params":{"a":"-0"}}', True),  # a 10: no `-0` scan
        (b'{"jsonrpc":"2.0","id":"-0","method":"echo","params":{}}', True),  # a string, as written
        (b'{"jsonrpc":"2.0","id":"\\u0041","method":"echo","params":{}}', False),
    ],
)
def test_only_an_id_written_unlike_its_encoding_is_declined(body: bytes, taken: bool) -> None:
    request = _request(body)
    if not taken:
        assert request is None
        return
    assert request is not None
    assert request[2] == body + b"\n"


async def test_an_id_0_goes_the_fast_way_and_minus_0_the_full_way_each_in_its_bytes(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = await open_session(http, proxy.url)
    with anyio.fail_after(20):
        for raw_id, fast in ((b"0", 1), (b"-0", 0)):
            before = proxy.app.fast.taken
            body = b'{"jsonrpc":"2.0","id":%s,"method":"echo","params":{"t":"-0"}}' % raw_id
            response = await http.post(proxy.url, content=body, headers={**JSON_ONLY, **headers})
            span = core.value_span(response.content, ("id",))
            assert span is not None
            assert response.content[span[0] : span[1]] == raw_id
            assert proxy.app.fast.taken - before == fast


def _replays(store: MemoryEventStore, first: str, answer: bytes) -> list[tuple[str, bytes]] | None:
    replay = anyio.run(store.replay, "s", first)
    return None if replay is None else replay.events


@pytest.mark.parametrize("max_events", [1, 2, 8])
def test_store_answer_now_stores_what_two_store_now_store(max_events: int) -> None:
    whole = MemoryEventStore(max_events_per_stream=max_events, max_streams_per_session=2)
    each = MemoryEventStore(max_events_per_stream=max_events, max_streams_per_session=2)
    for n in range(5):  # past the stream bound: the oldest streams are evicted alike
        stream, answer = f"st{n}", b'{"n":%d}' % n
        seq = whole.store_answer_now("s", stream, answer)
        priming = each.store_now("s", stream, None)
        assert priming == f"{stream}.{seq}"
        assert each.store_now("s", stream, answer) == f"{stream}.{seq + 1}"
        for event_id in (priming, f"{stream}.{seq + 1}", f"{stream}.{seq + 2}"):
            assert _replays(whole, event_id, answer) == _replays(each, event_id, answer)
    assert _replays(whole, "st0.0", b"") is None  # evicted
    assert whole.store_now("s", "later", None) == each.store_now("s", "later", None)


async def test_a_fast_sse_answer_replays_from_its_priming_event_in_a_second_session() -> None:
    async with in_process_proxy(PEER, pool_size=2) as proxy, httpx.AsyncClient(timeout=20) as http:
        with anyio.fail_after(20):
            for _ in range(2):  # the store's first stream of a session, and of a second session
                headers = await open_session(http, proxy.url)
                for rid in (1, 2):
                    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "echo", "params": {}})
                    response = await http.post(proxy.url, content=body, headers={**BOTH, **headers})
                    priming, answer = _events(response.content)
                    assert priming["data"] == ""
                    assert int(answer["id"].rsplit(".", 1)[1]) == int(priming["id"].rsplit(".", 1)[1]) + 1
                    assert json.loads(answer["data"])["id"] == rid
                    resume = {"accept": "text/event-stream", "last-event-id": priming["id"], **headers}
                    replayed = await http.get(proxy.url, headers=resume)
                    assert _events(replayed.content) == [answer]
            assert proxy.app.fast.taken == 4


async def test_an_open_fast_request_counts_and_its_answer_touches_the_session(
    proxy: Proxy, http: httpx.AsyncClient
) -> None:
    headers = await open_session(http, proxy.url)
    [session] = proxy.app.sessions.sessions.values()
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "echo", "params": {}})
    before = session.last_active
    with anyio.fail_after(20):
        response = await http.post(proxy.url, content=body, headers={**JSON_ONLY, **headers})
    assert json.loads(response.content)["id"] == 5
    assert proxy.app.fast.taken == 1
    assert session.open_requests == 0
    assert session.last_active >= before
