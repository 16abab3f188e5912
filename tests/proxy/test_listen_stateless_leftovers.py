"""The stateless bridge's holding of progress for a client over the mark, pinned on the bridge itself (the
review of s28's leftovers; the end-to-end cut: test_listen_stateless_slow.py):

- what the child wrote for one request reaches its client in that order: a held progress notification goes
  out before a later log line or answer for the same request, and held tokens in the order first held;
- held progress is sent, not dropped, before the answer or before the -32000 of a child that ended, and
  nothing stays held after;
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpframe import core
from mcpframe.http.pipe import MeteredPipe
from mcpframe.http.streams import Stream
from mcpframe.proxy.listen_bridge import Route
from mcpframe.proxy.listen_stateless import CUT_AT, StatelessBridge

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _item(raw: bytes) -> Any:
    [item] = core.decode(raw, lazy=True)
    return item


def _progress(token: str, number: int) -> Any:
    params = {"progressToken": token, "progress": number}
    return _item(core.encode_notification("notifications/progress", params))


def _log(text: str) -> Any:
    return _item(core.encode_notification("notifications/message", {"level": "info", "data": text}))


def _answer(upstream: int) -> Any:
    return _item(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % upstream)


class _Bridged:
    """One stateless POST (client id 7, upstream id 1) waiting on a bridge, its SSE answer attached."""

    def __init__(self, tokens: list[str]) -> None:
        self.spawned: list[tuple[Any, ...]] = []
        self.bridge = StatelessBridge(None, max_frame=1 << 22, spawn=self._spawn)  # type: ignore[arg-type]
        self.route = route = Route(Stream(None, None), [1], tokens)
        self.bridge.pending[1] = (route, 7)
        for token in tokens:
            self.bridge.tokens[token] = route
        route.on_close.append(lambda: self.bridge._forget(route, 1))
        self.pipe: MeteredPipe

    def _spawn(self, *args: Any) -> None:
        self.spawned.append(args)

    async def attach(self) -> None:
        pipe = await self.route.stream.attach(retry_ms=None)
        assert isinstance(pipe, MeteredPipe)
        self.pipe = pipe

    def fall_behind(self) -> None:
        """What the client has not taken passes the mark."""
        self.pipe.put(b"x" * (CUT_AT + 1))

    def catch_up(self) -> None:
        while self.pipe.get_nowait():
            pass

    def sent(self) -> list[Any]:
        """The frames the client got since it caught up, in order (decoded)."""
        frames = []
        while chunk := self.pipe.get_nowait():
            for line in chunk.split(b"\n"):
                if line.startswith(b"data: "):
                    frames.append(json.loads(line[6:]))
        return frames


def _shown(frame: dict[str, Any]) -> Any:
    if "id" in frame:
        return ("answer", frame["id"])
    params = frame["params"]
    if frame["method"] == "notifications/progress":
        return (params["progressToken"], params["progress"])
    return ("log", params["data"])


async def test_a_log_line_after_held_progress_comes_after_it() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    await client.bridge._route(_progress("tok", 1))  # held: the client is over the mark
    await client.bridge._route(_log("after 1"))
    client.pipe.get_nowait()  # the client takes the bytes that put it over the mark
    await client.bridge._route(_answer(1))
    assert [_shown(f) for f in client.sent()] == [("tok", 1), ("log", "after 1"), ("answer", 7)]


async def test_what_the_client_got_while_behind_keeps_the_childs_order() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    written = [_progress("tok", 1), _log("after 1"), _progress("tok", 2), _progress("tok", 3)]
    for item in (*written, _log("after 3")):
        await client.bridge._route(item)
    await client.bridge._route(_answer(1))
    client.pipe.get_nowait()  # the bytes that put it over the mark
    assert [_shown(f) for f in client.sent()] == [
        ("tok", 1),
        ("log", "after 1"),
        ("tok", 3),  # 2 replaced while held
        ("log", "after 3"),
        ("answer", 7),
    ]


async def test_held_tokens_go_out_in_the_order_first_held() -> None:
    client = _Bridged(["a", "b"])
    await client.attach()
    client.fall_behind()
    for item in (_progress("a", 1), _progress("b", 1), _progress("a", 2)):
        await client.bridge._route(item)
    client.catch_up()
    await client.bridge._route(_answer(1))
    assert [_shown(f) for f in client.sent()] == [("a", 2), ("b", 1), ("answer", 7)]


class _EndingChild:
    """A shared child that writes `frames` and ends (status 1)."""

    returncode = None

    def __init__(self, frames: list[Any]) -> None:
        self._frames = frames

    async def frames(self, *, max_frame: int) -> AsyncIterator[Any]:
        for frame in self._frames:
            yield frame

    async def close(self) -> int:
        self.returncode = 1
        return 1


async def test_held_progress_goes_out_before_the_answer() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    await client.bridge._route(_progress("tok", 1))
    await client.bridge._route(_progress("tok", 2))
    client.pipe.get_nowait()
    await client.bridge._route(_answer(1))
    assert [_shown(f) for f in client.sent()] == [("tok", 2), ("answer", 7)]
    assert not client.bridge.behind
    assert client.route.closed


async def test_held_progress_goes_out_before_the_error_of_a_child_that_ended() -> None:
    client = _Bridged(["tok"])
    await client.attach()
    client.fall_behind()
    child = _EndingChild([_progress("tok", 1), _progress("tok", 2)])
    client.bridge.child = child  # type: ignore[assignment]
    await client.bridge._read(child)  # type: ignore[arg-type]
    client.pipe.get_nowait()
    sent = client.sent()
    assert [_shown(f) for f in sent] == [("tok", 2), ("answer", 7)]
    assert sent[-1]["error"]["code"] == -32000
    assert "exited (status 1)" in sent[-1]["error"]["message"]
    assert client.route.closed
    assert not client.bridge.behind
    assert not client.bridge.pending
    assert client.bridge.child is None
