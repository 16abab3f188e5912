"""How the stateless bridge rewrites a request's progress token for the shared child, and that it keeps no
entry for a request once it ended:

- `_for_child` changes the id and `_meta.progressToken` to the upstream id and keeps every other byte as
  the client wrote it (escaped tokens, big integers, spaces around the token), and returns the
  token's own bytes;
- a `_meta` naming `progressToken` twice is refused (-32600): only one could be rewritten, and a child that
  reads the other would route its progress by the client's own token;
- `tokens` and `pending` are empty after an answer, after a client that disconnected (its request
  cancelled upstream), and after the child exited.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import in_process_proxy, modern_call, modern_headers, tools_child

from mcpframe import core, jsonrpc
from mcpframe.proxy.listen_stateless import StatelessBridge, _for_child
from mcpframe.proxy.reader import splice_two

pytestmark = pytest.mark.anyio

_TOKEN = ("params", "_meta", "progressToken")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _message(raw: bytes) -> Any:
    [message] = core.decode(raw, max_frame=1 << 20)
    return message


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",'
        b'"_meta":{"progressToken":1,"x":[1,2]},"arguments":{}}}',
        # an escaped string token, spaces around it, a long id: the token's place moves with the id
        b'{"jsonrpc":"2.0","id":"a-very-long-client-id-xxxxxxxxxxxxxxxxxx","method":"tools/call",'
        b'"params":{"_meta":{"progressToken" :  "t\\"\\u00e9\xc3\xa9" ,"p":1}}}',
        # a BOM (the decoder leaves it out of the message's raw), an id past 64 bits
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m",'
        b'"params":{"_meta":{"progressToken":-0}}}',
        # a token past 64 bits, the id after the params
        b'{"jsonrpc":"2.0","method":"m","params":{"_meta":{"progressToken":18446744073709551616}},"id":7}',
        # the key escaped; a decoy `progressToken` in the arguments before the `_meta`
        b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"arguments":{"progressToken":"decoy"},'
        b'"_meta":{"progress\\u0054oken":"q"}}}',
        b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"progressToken":""}}}',
    ],
)
def test_the_child_gets_the_request_with_only_its_id_and_token_changed(raw: bytes) -> None:
    message = _message(raw)
    raw = message.raw
    frame, token = _for_child(message, 42)
    id_span = core.value_span(raw, ("id",))
    token_span = core.value_span(raw, _TOKEN)
    assert id_span is not None
    assert token_span is not None
    assert frame == splice_two(raw, id_span, b"42", token_span, b"42")  # every other byte as written
    assert token == raw[token_span[0] : token_span[1]]


@pytest.mark.parametrize(
    "meta",
    [b'{"progressToken":1.5}', b'{"progressToken":null}', b"{}", b'{"progressToken":{"a":1}}'],
)
def test_a_request_without_a_usable_token_gets_its_id_changed_only(meta: bytes) -> None:
    raw = b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":%s}}' % meta
    frame, token = _for_child(_message(raw), 42)
    assert frame == raw.replace(b'"id":7', b'"id":42')
    assert token is None


@pytest.mark.parametrize(
    "meta",
    [
        b'{"progressToken":1,"progressToken":"b"}',
        b'{"progressToken":"a","x":{"progressToken":2},"progress\\u0054oken":"b"}',
    ],
)
def test_a_meta_naming_the_token_twice_is_refused(meta: bytes) -> None:
    raw = b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":%s}}' % meta
    with pytest.raises(ValueError, match="more than once"):
        _for_child(_message(raw), 42)


def test_a_token_named_once_at_its_level_is_not_refused() -> None:
    meta = b'{"x":{"progressToken":2},"progressToken":"a"}'
    raw = b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":%s}}' % meta
    frame, token = _for_child(_message(raw), 42)
    assert token == b'"a"'
    assert json.loads(frame)["params"]["_meta"] == {"x": {"progressToken": 2}, "progressToken": 42}


def _events(raw: bytes) -> list[Any]:
    return [json.loads(line[6:]) for line in raw.decode().split("\n") if line.startswith("data: ")]


def _empty(bridge: StatelessBridge) -> bool:
    return not bridge.tokens and not bridge.pending and not bridge.meters and not bridge.json_only


async def _settled(bridge: StatelessBridge) -> None:
    while not _empty(bridge):  # bounded by the caller's fail_after
        await anyio.sleep(0.01)


async def test_no_entry_is_kept_after_an_answer_a_disconnect_or_the_child_exiting(tmp_path: Path) -> None:
    async with (
        in_process_proxy(tools_child(tmp_path), pool_size=1) as proxy,
        httpx.AsyncClient(timeout=30) as http,
    ):
        bridge = proxy.app.stateless
        with anyio.fail_after(30):
            body = modern_call("answer", 5, {}, progressToken="c-5")
            response = await http.post(proxy.url, json=body, headers=modern_headers("answer"))
            progress, answer = _events(response.content)
            assert progress["params"] == {"progressToken": "c-5", "progress": 1}  # the client's token back
            upstream, seen = answer["result"].pop("seen")
            assert isinstance(upstream, int)
            assert seen == upstream  # the child saw the upstream id as the id and as the token
            assert answer == {"jsonrpc": "2.0", "id": 5, "result": {"content": []}}
            await _settled(bridge)

            body = modern_call("hang", 6, {}, progressToken=6)
            async with http.stream("POST", proxy.url, json=body, headers=modern_headers("hang")) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data: "):
                        assert json.loads(line[6:])["params"]["progressToken"] == 6
                        assert bridge.tokens
                        assert bridge.pending
                        break  # the client leaves: its request is cancelled upstream
            await _settled(bridge)

            body = modern_call("exit", 7, {}, progressToken="c-7")
            response = await http.post(proxy.url, json=body, headers=modern_headers("exit"))
            progress, error = _events(response.content)
            assert progress["params"]["progressToken"] == "c-7"
            assert error["id"] == 7
            assert error["error"]["code"] == jsonrpc.CONNECTION_CLOSED
            await _settled(bridge)
            assert not bridge.behind


async def test_a_request_naming_the_token_twice_gets_400_and_reaches_no_child(tmp_path: Path) -> None:
    body = json.dumps(modern_call("answer", 8, {}, progressToken="a")).encode()
    body = body.replace(b'"progressToken": "a"', b'"progressToken": 1, "progressToken": "a"')
    assert body.count(b"progressToken") == 2
    async with (
        in_process_proxy(tools_child(tmp_path), pool_size=1) as proxy,
        httpx.AsyncClient(timeout=30) as http,
    ):
        with anyio.fail_after(30):
            response = await http.post(proxy.url, content=body, headers=modern_headers("answer"))
        assert response.status_code == 400
        error = response.json()
        assert error["id"] == 8
        assert error["error"]["code"] == jsonrpc.INVALID_REQUEST
        assert "progressToken more than once" in error["error"]["message"]
        assert proxy.app.stateless.child is None  # refused before a child was started for it
        assert _empty(proxy.app.stateless)
