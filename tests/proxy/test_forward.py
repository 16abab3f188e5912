"""The Forwarder alone: two client sessions over one in-memory upstream played by the test."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from mcpframe.proxy.forward import ClientSession, Forwarder, UpstreamLink
from mcpframe.transports.base import TransportClosedError

pytestmark = pytest.mark.anyio


class MemoryUpstream:
    """An `UpstreamLink` whose other end is the test: `frames()` what the proxy sent, `write()` answers."""

    def __init__(self) -> None:
        self._to_server, self._server_in = anyio.create_memory_object_stream[bytes](64)
        self._server_out, self._from_server = anyio.create_memory_object_stream[bytes](64)
        self._pending = b""
        self.status = 0
        self.closed_input = False

    async def send(self, data: bytes) -> None:
        try:
            await self._to_server.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise TransportClosedError("gone") from exc

    async def receive(self) -> bytes:
        try:
            return await self._from_server.receive()
        except anyio.EndOfStream:
            return b""

    async def close_input(self) -> None:
        self.closed_input = True
        self._to_server.close()

    async def wait(self) -> int:
        return self.status

    async def aclose(self) -> None:
        self._to_server.close()

    # the server's side
    async def frame(self) -> dict[str, Any]:
        return json.loads(await self.line())

    async def line(self) -> bytes:
        """The next frame the proxy sent, as its bytes."""
        with anyio.fail_after(5):
            while b"\n" not in self._pending:
                self._pending += await self._server_in.receive()
        line, self._pending = self._pending.split(b"\n", 1)
        return line

    async def write(self, *messages: Any) -> None:
        data = b"".join(m if isinstance(m, bytes) else json.dumps(m).encode() + b"\n" for m in messages)
        await self._server_out.send(data)

    def die(self, status: int) -> None:
        self.status = status
        self._server_out.close()


class Client:
    """A client session's far end: what the forwarder delivered to it, frame by frame."""

    def __init__(self, forwarder: Forwarder) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[bytes](64)
        self._pending = b""
        self.session: ClientSession = forwarder.open_session(self._send.send)

    async def request(self, id: Any, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.session.feed(json.dumps(message).encode() + b"\n")

    async def notify(self, method: str, params: Any) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        await self.session.feed(json.dumps(message).encode() + b"\n")

    async def frame(self) -> dict[str, Any]:
        return json.loads(await self.line())

    async def line(self) -> bytes:
        """The next frame delivered to this client, as its bytes."""
        with anyio.fail_after(5):
            while b"\n" not in self._pending:
                self._pending += await self._receive.receive()
        line, self._pending = self._pending.split(b"\n", 1)
        return line

    def idle(self) -> bool:
        """Nothing delivered and not read yet."""
        with contextlib.suppress(anyio.WouldBlock):
            self._pending += self._receive.receive_nowait()
        return not self._pending


class Harness:
    def __init__(self, forwarder: Forwarder, links: list[MemoryUpstream], warnings: list[str]) -> None:
        self.forwarder = forwarder
        self.links = links
        self.warnings = warnings

    @property
    def upstream(self) -> MemoryUpstream:
        return self.links[-1]


@contextlib.asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[Harness]:
    """A Forwarder made with `options`, serving over memory upstreams, once it connected the first."""
    links: list[MemoryUpstream] = []
    warnings: list[str] = []

    async def connect() -> UpstreamLink:
        links.append(MemoryUpstream())
        return links[-1]

    forwarder = Forwarder(connect, warn=warnings.append, **options)
    async with anyio.create_task_group() as group:
        group.start_soon(forwarder.serve)
        with anyio.fail_after(5):
            while not links:
                await anyio.sleep(0)
        yield Harness(forwarder, links, warnings)
        group.cancel_scope.cancel()


@pytest.fixture
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    async with serving(on_upstream_exit=getattr(request, "param", "restart")) as harness:
        yield harness


async def test_equal_ids_from_two_sessions_reach_the_right_session(harness: Harness) -> None:
    a, b = Client(harness.forwarder), Client(harness.forwarder)
    await a.request(1, "tools/call", {"name": "a"})
    await b.request(1, "tools/call", {"name": "b"})
    first, second = await harness.upstream.frame(), await harness.upstream.frame()
    assert first["id"] != second["id"]
    assert (first["params"]["name"], second["params"]["name"]) == ("a", "b")
    await harness.upstream.write(
        {"jsonrpc": "2.0", "id": second["id"], "result": "for b"},
        {"jsonrpc": "2.0", "id": first["id"], "result": "for a"},
    )
    assert await a.frame() == {"jsonrpc": "2.0", "id": 1, "result": "for a"}
    assert await b.frame() == {"jsonrpc": "2.0", "id": 1, "result": "for b"}


@pytest.mark.parametrize("id", ["s", 0, -1, 2**63 - 1, 2**64 + 1, 10**30])
async def test_ids_of_any_type_and_size_come_back_exactly(harness: Harness, id: Any) -> None:
    a = Client(harness.forwarder)
    await a.request(id, "ping")
    sent = await harness.upstream.frame()
    assert 1 <= sent["id"] < 2**63
    await harness.upstream.write({"jsonrpc": "2.0", "id": sent["id"], "result": {}})
    answer = await a.frame()
    assert answer["id"] == id
    assert type(answer["id"]) is type(id)


async def test_cancelled_and_progress_are_rewritten_per_session(harness: Harness) -> None:
    a, b = Client(harness.forwarder), Client(harness.forwarder)
    meta = {"_meta": {"progressToken": "t"}}
    await a.request("x", "tools/call", meta)
    await b.request("x", "tools/call", meta)
    up_a, up_b = await harness.upstream.frame(), await harness.upstream.frame()
    token_a, token_b = up_a["params"]["_meta"]["progressToken"], up_b["params"]["_meta"]["progressToken"]
    assert token_a != token_b
    progress = "notifications/progress"
    await harness.upstream.write(
        {"jsonrpc": "2.0", "method": progress, "params": {"progressToken": token_b, "progress": 2}}
    )
    assert await b.frame() == {
        "jsonrpc": "2.0",
        "method": progress,
        "params": {"progressToken": "t", "progress": 2},
    }
    assert a.idle()
    await a.notify("notifications/cancelled", {"requestId": "x", "reason": "bored"})
    cancelled = await harness.upstream.frame()
    assert cancelled["params"] == {"requestId": up_a["id"], "reason": "bored"}
    await harness.upstream.write({"jsonrpc": "2.0", "id": up_a["id"], "result": "late"})  # dropped
    await harness.upstream.write({"jsonrpc": "2.0", "id": up_b["id"], "result": "done"})
    assert (await b.frame())["result"] == "done"
    assert a.idle()


@pytest.mark.parametrize(
    "token", [b'"t"', b'"a\\"b\\u00e9"', b"0", b"9223372036854775807", b"18446744073709551617", b"1.5"]
)
async def test_token_and_ids_are_spliced_not_re_encoded(harness: Harness, token: bytes) -> None:
    a = Client(harness.forwarder)
    # odd spacing, key order and an escape a re-encoder would not keep; a decoy token in a string
    head = b'{ "params" : {"q":"\\u0041 \\"progressToken\\":1", "_meta": {"k":[1], "progressToken" : '
    await a.session.feed(head + token + b' }}, "method":"tools/call" ,"id":"c-1","jsonrpc":"2.0"}\n')
    sent = await harness.upstream.line()
    uid = json.loads(sent)["id"]
    want = head.replace(b'"progressToken" : ', b'"progressToken" : %d' % uid)
    assert sent == want + b' }}, "method":"tools/call" ,"id":%d,"jsonrpc":"2.0"}' % uid
    note = b'{"method":"notifications/progress","jsonrpc":"2.0","params":{ "progressToken": %d ,"p":1}}'
    await harness.upstream.write(note % uid + b"\n")
    assert await a.line() == note.replace(b"%d", token)
    cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId" :"c-1","x":1}}'
    await a.session.feed(cancel + b"\n")
    assert await harness.upstream.line() == cancel.replace(b'"c-1"', b"%d" % uid)


async def test_relayed_and_held_frames_keep_their_order_in_one_chunk(harness: Harness) -> None:
    a = Client(harness.forwarder)

    def req(id: int, params: str = "{}") -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}\n' % (id, params.encode())

    cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n'
    token = '{"_meta":{"progressToken":"t"}}'
    # relayed, held (the cancellation of the first), then frames after it: the proxy routes them in order
    await a.session.feed(req(1) + cancel + req(2) + req(1) + req(3, token) + b"bad\n" + req(4))
    sent = [await harness.upstream.frame() for _ in range(6)]
    assert [m.get("method") for m in sent] == ["tools/call", "notifications/cancelled", *["tools/call"] * 4]
    assert sent[1]["params"]["requestId"] == sent[0]["id"]
    assert len({m["id"] for m in sent if "id" in m}) == 5
    assert (await a.frame())["error"]["code"] == -32700  # the bad line, answered by the proxy
    first, _, two, one, three, four = (m.get("id") for m in sent)
    assert sent[4]["params"]["_meta"]["progressToken"] == three
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": three}}

    def answer(uid: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": uid, "result": {}}

    # relayed answers, a held notification, answers after it (the token's is followed), a late one
    await harness.upstream.write(
        answer(two), answer(one), progress, answer(three), answer(four), answer(first)
    )
    got = [await a.frame() for _ in range(5)]
    assert [m.get("id", "progress") for m in got] == [2, 1, "progress", 3, 4]
    assert got[2]["params"]["progressToken"] == "t"
    assert a.idle()  # the cancelled request's late answer was dropped
    assert harness.forwarder._ids.pending(a.session.conn) == []


async def test_a_held_frame_keeps_a_last_cr_of_its_own(harness: Harness) -> None:
    a = Client(harness.forwarder)
    frame = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}} \r'
    await a.session.feed(frame + b"\r\n")  # the last CR is the terminator's, the one before it content
    sent = await harness.upstream.line()
    assert sent == frame.replace(b'"id":1', b'"id":%d' % json.loads(sent)["id"])


async def test_server_request_goes_to_the_session_with_a_request_in_flight(harness: Harness) -> None:
    a, b = Client(harness.forwarder), Client(harness.forwarder)
    await b.request(5, "tools/call")
    call = await harness.upstream.frame()
    await harness.upstream.write({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
    asked = await b.frame()
    assert asked["method"] == "roots/list"
    assert a.idle()
    await b.session.feed(
        json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}).encode() + b"\n"
    )
    assert await harness.upstream.frame() == {"jsonrpc": "2.0", "id": "srv-1", "result": {"roots": []}}
    await harness.upstream.write({"jsonrpc": "2.0", "id": call["id"], "result": {}})
    assert (await b.frame())["id"] == 5


async def test_notifications_fan_out_and_updates_go_to_subscribers(harness: Harness) -> None:
    a, b = Client(harness.forwarder), Client(harness.forwarder)
    await a.request(1, "resources/subscribe", {"uri": "u"})
    sub = await harness.upstream.frame()
    await harness.upstream.write({"jsonrpc": "2.0", "id": sub["id"], "result": {}})
    await a.frame()
    await harness.upstream.write(
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "u"}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 1}},
    )
    methods_a = [(await a.frame())["method"] for _ in range(3)]
    methods_b = [(await b.frame())["method"] for _ in range(2)]
    assert methods_a[0] == "notifications/resources/updated"
    assert methods_a[1:] == methods_b == ["notifications/tools/list_changed", "notifications/message"]


async def test_malformed_frames(harness: Harness) -> None:
    a = Client(harness.forwarder)
    await a.session.feed(b'{"jsonrpc":"2.0","id":1,"method":\n{"jsonrpc":"1.0","id":"q","method":"x"}\n')
    assert (await a.frame())["error"]["code"] == -32700
    refused = await a.frame()
    assert (refused["id"], refused["error"]["code"]) == ("q", -32600)
    await a.request(2, "ping")
    ping = await harness.upstream.frame()
    assert ping["method"] == "ping"  # nothing else was forwarded before it
    await harness.upstream.write(b"{broken\n", {"jsonrpc": "2.0", "id": ping["id"], "result": {}})
    assert await a.frame() == {"jsonrpc": "2.0", "id": 2, "result": {}}  # the broken line never came
    assert "malformed" in harness.warnings[0]


async def test_closed_session_cancels_its_requests_upstream(harness: Harness) -> None:
    a = Client(harness.forwarder)
    await a.request("r", "tools/call")
    sent = await harness.upstream.frame()
    await harness.forwarder.close_session(a.session)
    cancelled = await harness.upstream.frame()
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == sent["id"]


async def test_upstream_death_fails_pending_and_restart_replays_the_handshake(harness: Harness) -> None:
    a = Client(harness.forwarder)
    await a.request(0, "initialize", {"protocolVersion": "2025-11-25"})
    init = await harness.upstream.frame()
    await harness.upstream.write(
        {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2025-11-25"}}
    )
    await a.frame()
    await a.notify("notifications/initialized", {})
    await harness.upstream.frame()
    await a.request(1, "tools/call")
    await harness.upstream.frame()
    harness.upstream.die(9)
    failed = await a.frame()
    assert failed["id"] == 1
    assert failed["error"]["code"] == -32000
    assert "status 9" in failed["error"]["message"]
    old = harness.upstream

    async def play_restarted_server() -> None:
        with anyio.fail_after(5):
            while harness.upstream is old:
                await anyio.sleep(0)
        replayed = await harness.upstream.frame()
        assert replayed["method"] == "initialize"
        await harness.upstream.write({"jsonrpc": "2.0", "id": replayed["id"], "result": {}})
        assert (await harness.upstream.frame())["method"] == "notifications/initialized"
        call = await harness.upstream.frame()
        await harness.upstream.write({"jsonrpc": "2.0", "id": call["id"], "result": "again"})

    async with anyio.create_task_group() as group:
        group.start_soon(play_restarted_server)
        await a.request(2, "tools/call")
    assert await a.frame() == {"jsonrpc": "2.0", "id": 2, "result": "again"}  # the replay's answer swallowed


@pytest.mark.parametrize("harness", ["exit"], indirect=True)
async def test_exit_policy_refuses_after_death(harness: Harness) -> None:
    a = Client(harness.forwarder)
    harness.upstream.die(4)
    with anyio.fail_after(5):
        while harness.forwarder._link is not None:
            await anyio.sleep(0)
    await a.request(1, "ping")
    refused = await a.frame()
    assert refused["error"]["code"] == -32000
    assert len(harness.links) == 1


class TrickleClient(Client):
    """A client whose sink takes at most `take` bytes at once (`send_nowait`), the rest by awaiting, or
    fails at once (`take` < 0: the client is gone)."""

    def __init__(self, forwarder: Forwarder, take: int) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[bytes](64)
        self._pending = b""
        self._take = take
        self.session = forwarder.open_session(self._send.send, self._send_nowait)

    def _send_nowait(self, data: bytes) -> int:
        if self._take < 0:
            raise TransportClosedError("the client is gone")
        self._send.send_nowait(data[: self._take])
        return min(len(data), self._take)


async def test_answers_one_at_a_time_partly_taken_arrive_whole_and_in_order(harness: Harness) -> None:
    """The one-session answer path: what the client's sink does not take at once follows, in order."""
    a = TrickleClient(harness.forwarder, take=7)
    for n in range(3):
        await a.request(n, "tools/call", {"name": f"call {n}"})
        sent = await harness.upstream.frame()
        await harness.upstream.write({"jsonrpc": "2.0", "id": sent["id"], "result": f"answer {n}"})
        assert await a.frame() == {"jsonrpc": "2.0", "id": n, "result": f"answer {n}"}
    assert a.idle()


async def test_a_client_gone_on_the_answer_path_has_its_requests_cancelled(harness: Harness) -> None:
    """An answer the client cannot take (its sink fails) closes its session: its other request is
    cancelled upstream, nothing is delivered."""
    a = TrickleClient(harness.forwarder, take=-1)
    await a.request("one", "tools/call")
    await a.request("two", "tools/call")
    first, second = await harness.upstream.frame(), await harness.upstream.frame()
    await harness.upstream.write({"jsonrpc": "2.0", "id": first["id"], "result": {}})
    cancelled = await harness.upstream.frame()
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == second["id"]
    assert a.idle()
