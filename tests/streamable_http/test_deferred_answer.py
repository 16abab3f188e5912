"""A tool that gives the loop one turn (`await asyncio.sleep(0)`) over the lean server, and the bytes of
requests read through its one shared read buffer (`wire.WireServer.read_buffer`): bodies larger than that
buffer, and bodies of two connections arriving interleaved, each answered with its own text.

No test here waits for time to pass: what the client waits for is bounded by `fail_after`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest

from mcpframe.http import wire as wire_module
from mcpframe.http.wire_parts import Parked
from mcpframe.server import Context

from ._fast_support import record_fast_posts
from ._live_support import GatedTools, serving
from ._server_support import call, messages, raw_post

pytestmark = pytest.mark.anyio

BIG = max(3 * wire_module._READ_SIZE, 2 * wire_module._BODY_HIGH) + 123  # several reads, and reading paused


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tools(GatedTools):
    """`GatedTools` with tools that give the loop one turn before answering (and one that logs after it)."""

    def __init__(self) -> None:
        super().__init__("deferred-answer")

        @self.server.tool
        async def ayield(text: str) -> str:
            """Returns `text` after one loop turn."""
            await asyncio.sleep(0)
            return text

        @self.server.tool
        async def yield_log(ctx: Context) -> str:
            """One loop turn, a log message, another turn, then the answer."""
            await asyncio.sleep(0)
            await ctx.info("turned")
            await asyncio.sleep(0)
            return "after the log"


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the fast path made of each POST: "deferred" (a `Parked` JSON answer), "other" or "declined"."""
    return record_fast_posts(
        monkeypatch,
        lambda got: "declined" if got is None else "deferred" if isinstance(got, Parked) else "other",
    )


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, Any]:
    """One HTTP/1.1 response with a content-length: its status and its JSON body."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    lines = head.split("\r\n")
    fields = dict(line.lower().split(": ", 1) for line in lines[1:] if line)
    body = await reader.readexactly(int(fields["content-length"]))
    return int(lines[0].split()[1]), json.loads(body)


def _text(answer: Any) -> str:
    text = answer["result"]["content"][0]["text"]
    assert isinstance(text, str)
    return text


async def test_a_tool_that_yields_once_is_answered_json_by_the_parked_answer(taken: list[str]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto") as (url, app, client, headers):
        taken.clear()
        with anyio.fail_after(10):
            for rid in range(2, 6):
                response = await client.post(
                    url, json=call("ayield", {"text": f"t{rid}"}, rid=rid), headers=headers
                )
                assert response.status_code == 200
                assert response.headers["content-type"] == "application/json"
                assert response.json()["id"] == rid
                assert _text(response.json()) == f"t{rid}"
        assert taken == ["deferred"] * 4
        assert app.posts.admission.running == 0


async def test_a_tool_that_yields_then_logs_then_answers_is_switched_to_sse(taken: list[str]) -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto") as (url, app, client, headers):
        taken.clear()
        with anyio.fail_after(10):
            response = await client.post(url, json=call("yield_log", rid=9), headers=headers)
        assert response.headers["content-type"].startswith("text/event-stream")
        sent = messages(response.text)
        assert [m.get("method") for m in sent] == ["notifications/message", None]
        assert sent[0]["params"]["data"] == "turned"
        assert sent[1]["id"] == 9
        assert _text(sent[1]) == "after the log"
        assert taken == ["deferred"]
        assert app.posts.admission.running == 0


async def test_a_body_larger_than_the_read_buffer_is_read_whole() -> None:
    tools = Tools()
    text = "".join(chr(ord("a") + i % 26) for i in range(BIG))
    async with serving(tools, response_mode="auto") as (url, app, _client, headers):
        host, port = url.split("/")[2].split(":")
        with anyio.fail_after(10):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw_post(url, headers, call("ayield", {"text": text}, rid=20)))
            status, answer = await _read_answer(reader)
            writer.close()
        assert (status, answer["id"]) == (200, 20)
        assert _text(answer) == text
        assert app.posts.admission.running == 0


async def test_bodies_of_two_connections_read_interleaved_are_answered_each_with_its_own() -> None:
    tools = Tools()
    texts = ["x" * BIG, "y" * (BIG + 7)]
    async with serving(tools, response_mode="auto") as (url, app, _client, headers):
        host, port = url.split("/")[2].split(":")
        with anyio.fail_after(10):
            conns = [await asyncio.open_connection(host, int(port)) for _ in texts]
            posts = [
                raw_post(url, headers, call("echo", {"text": t}, rid=30 + i)) for i, t in enumerate(texts)
            ]
            piece = wire_module._READ_SIZE // 2
            for start in range(0, max(len(p) for p in posts), piece):  # one piece of each in turn
                for (_, writer), post in zip(conns, posts, strict=True):
                    if start < len(post):
                        writer.write(post[start : start + piece])
                        await writer.drain()
                await asyncio.sleep(0)
            answers = [await _read_answer(reader) for reader, _ in conns]
            for _, writer in conns:
                writer.close()
        assert [(status, got["id"]) for status, got in answers] == [(200, 30), (200, 31)]
        assert [_text(got) for _, got in answers] == texts
        assert app.posts.admission.running == 0
