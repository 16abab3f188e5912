"""`mcpframe proxy -- command` end to end, with the scripted peer (peer.py) and a raw NDJSON client."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import anyio
import pytest
from tests._process import stop_child

from .conftest import PEER, PROXY, RawClient, child_env

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True, params=["thread", "loop"])
def pump(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with both of the stdio proxy's pumps (`--pump`)."""
    monkeypatch.setattr(RawClient, "pump_flags", ("--pump", request.param))
    return str(request.param)


IDS = ["abc", "", "é\u2028", 0, -1, 2**63 - 1, 2**64 + 1, 10**30]


async def test_ids_cross_exactly_pipelined_and_eof_exits_zero() -> None:
    client = await RawClient.start()
    await client.handshake()
    for id in IDS:  # all in flight at once, so the proxy maps them side by side
        await client.send(
            b'{"jsonrpc":"2.0","id":%s,"method":"echo","params":{"n":1}}\n' % json.dumps(id).encode()
        )
    seen = {}
    for _ in IDS:
        line = await client.line()
        answer = json.loads(line)
        seen[json.dumps(answer["id"])] = answer
        if type(answer["id"]) is int:  # the digits as the client wrote them (no float on the way)
            assert b'"id": %d,' % answer["id"] in line
    assert sorted(seen) == sorted(json.dumps(id) for id in IDS)
    assert all(type(json.loads(key)) is type(answer["id"]) for key, answer in seen.items())
    assert {answer["result"]["params"]["n"] for answer in seen.values()} == {1}
    assert await client.aclose() == 0


async def test_malformed_client_lines_are_answered_not_forwarded() -> None:
    client = await RawClient.start()
    await client.handshake()
    await client.send(b"{not json\n")
    answer = await client.recv()
    assert answer["id"] is None
    assert answer["error"]["code"] == -32700
    data = answer["error"]["data"]  # where: the line's first byte in the stream, the byte in it, why
    assert data["at"] == 1
    assert data["offset"] > 0  # after the handshake's lines
    assert "property name" in data["detail"]
    await client.send(b'{"jsonrpc":"2.0","id":7,"method":5}\n')
    answer = await client.recv()
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32600
    answer = await client.call(8, "echo", {"still": "works"})
    assert answer["result"]["params"] == {"still": "works"}
    await client.aclose()


async def test_cancel_reaches_the_upstream_with_its_own_id() -> None:
    client = await RawClient.start()
    await client.handshake()
    await client.send({"jsonrpc": "2.0", "id": "mine", "method": "slow"})
    await client.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "mine"}}
    )
    report = await client.recv()
    assert report["method"] == "test/cancelled"
    assert report["params"]["known"] is True  # the id the peer was given for the slow request
    assert report["params"]["requestId"] != "mine"
    assert (await client.call(9, "echo"))["id"] == 9
    await client.aclose()


async def test_progress_tokens_are_rewritten_both_ways() -> None:
    client = await RawClient.start()
    await client.handshake()
    params = {"_meta": {"progressToken": "tok-1"}}
    await client.send({"jsonrpc": "2.0", "id": 1, "method": "progress", "params": params})
    first, second, answer = await client.recv(), await client.recv(), await client.recv()
    assert [first["params"]["progress"], second["params"]["progress"]] == [1, 2]
    assert first["params"]["progressToken"] == second["params"]["progressToken"] == "tok-1"
    assert answer["id"] == 1
    assert answer["result"]["token_seen"] != "tok-1"
    await client.aclose()


@pytest.mark.parametrize(
    ("method", "reply"),
    [
        ("roots/list", {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}),
        ("sampling/createMessage", {"role": "assistant", "content": {"type": "text", "text": "hi"}}),
        ("elicitation/create", {"action": "accept", "content": {"name": "x"}}),
        ("ping", {}),
    ],
)
async def test_server_requests_are_answered_by_the_client(method: str, reply: dict[str, object]) -> None:
    client = await RawClient.start()
    await client.handshake()
    await client.send({"jsonrpc": "2.0", "id": "outer", "method": "ask", "params": {"method": method}})
    asked = await client.recv()
    assert asked["method"] == method
    assert isinstance(asked["id"], int)
    await client.send({"jsonrpc": "2.0", "id": asked["id"], "result": reply})
    answer = await client.recv()
    assert answer == {"jsonrpc": "2.0", "id": "outer", "result": {"answer": reply}}
    await client.aclose()


async def test_notifications_list_changed_logging_unknown_and_subscriptions() -> None:
    client = await RawClient.start()
    await client.handshake()
    uri = "file:///watched"
    sent = [
        ["notifications/tools/list_changed", {}],
        ["notifications/message", {"level": "info", "data": "hello"}],
        ["notifications/resources/updated", {"uri": uri}],  # not subscribed yet: not forwarded
        ["x/custom", {"future": True}],
    ]
    await client.send({"jsonrpc": "2.0", "id": 1, "method": "notify", "params": {"notifications": sent}})
    got = [await client.recv() for _ in range(4)]
    assert [m.get("method") for m in got] == [
        "notifications/tools/list_changed",
        "notifications/message",
        "x/custom",
        None,
    ]
    assert (await client.call(2, "resources/subscribe", {"uri": uri}))["result"] == {}
    await client.send({"jsonrpc": "2.0", "id": 3, "method": "notify", "params": {"notifications": sent[2:3]}})
    assert (await client.recv())["params"] == {"uri": uri}
    assert (await client.recv())["id"] == 3
    await client.aclose()


async def test_malformed_upstream_line_is_dropped() -> None:
    client = await RawClient.start()
    await client.handshake()
    assert (await client.call(1, "garbage"))["result"] == {"after": "garbage"}
    await client.aclose()


async def test_upstream_crash_fails_pending_then_restarts_with_the_handshake() -> None:
    client = await RawClient.start()
    await client.handshake()
    await client.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
    await client.send({"jsonrpc": "2.0", "id": 2, "method": "crash", "params": {"status": 3}})
    failed = {(await client.recv())["id"]: None for _ in range(2)}
    assert set(failed) == {1, 2}
    answer = await client.call(3, "echo")
    # the new peer answers (the replayed initialize made it ready) and its initialize answer was swallowed
    assert answer["id"] == 3
    assert answer["result"]["initializations"] == 1
    await client.aclose()


async def test_crash_error_names_the_status() -> None:
    client = await RawClient.start()
    await client.handshake()
    answer = await client.call(2, "crash", {"status": 3})
    assert answer["error"]["code"] == -32000
    assert "exited with status 3" in answer["error"]["message"]
    await client.aclose()


async def test_on_upstream_exit_exit_ends_with_the_childs_status() -> None:
    client = await RawClient.start("--on-upstream-exit", "exit")
    await client.handshake()
    answer = await client.call(2, "crash", {"status": 5})
    assert "status 5" in answer["error"]["message"]
    with anyio.fail_after(20):
        assert await client.process.wait() == 5


async def test_sigterm_ends_the_proxy_and_the_child() -> None:
    client = await RawClient.start()
    await client.handshake()
    pid = (await client.call(1, "pid"))["result"]["pid"]
    client.process.send_signal(signal.SIGTERM)
    with anyio.fail_after(20):
        assert await client.process.wait() == 128 + signal.SIGTERM
    with anyio.fail_after(10):
        while True:  # reaped by init once the proxy is gone
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            await anyio.sleep(0.05)


async def test_a_command_that_cannot_run_exits_127() -> None:
    client = await RawClient.start(command=["/nonexistent/mcp-server"])
    with anyio.fail_after(20):
        assert await client.process.wait() == 127


def test_the_proxy_ends_when_its_stdout_is_closed() -> None:
    command = [*PROXY, *RawClient.pump_flags, "--", *PEER]
    pipe = subprocess.PIPE
    proxy = subprocess.Popen(command, stdin=pipe, stdout=pipe, env=child_env(), bufsize=0)
    assert proxy.stdin is not None
    assert proxy.stdout is not None
    try:
        proxy.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n')
        assert b'"id": 0' in proxy.stdout.readline()
        proxy.stdout.close()  # the client stops reading for good
        proxy.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"echo"}\n')  # its answer meets a closed pipe
        assert proxy.wait(timeout=20) == 0
    finally:
        stop_child(proxy)
