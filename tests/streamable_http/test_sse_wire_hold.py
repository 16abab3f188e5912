"""The held head of an SSE answer on the lean server (`http/sse_wire.py`'s `HOLD`): a suspended handler's
SSE response goes out with its first event or its end, so a `def` tool's answer is one write (head,
priming event, answer, end) with no loop turn of its own; an event before the answer sends the head at
once; a quiet stream gets its head after `HOLD`; a client leaving before the head went out still cancels
its handler once.

`HOLD` is set per test (a minute where the head must wait for the answer, so that a slow machine cannot
change what is written; a hundredth of a second where the test waits for the head): no test depends on
how fast the worker or the loop runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from mcpframe.http import sse_wire, wire_answers

from ._lean_support import Tools, in_mode
from ._live_support import post_streamed, read_raw, until
from ._server_support import call, messages, raw_post, sse_events

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def outs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bytes]]:
    """What the lean server wrote of its streamed answers: ("write" or "end", data), in order."""
    done: list[tuple[str, bytes]] = []
    write, end = wire_answers.Out.write, wire_answers.Out.end

    def wrote(self: Any, data: bytes) -> None:
        done.append(("write", data))
        write(self, data)

    def ended(self: Any, last: bytes = b"") -> None:
        done.append(("end", last))
        end(self, last)

    monkeypatch.setattr(wire_answers.Out, "write", wrote)
    monkeypatch.setattr(wire_answers.Out, "end", ended)
    return done


@pytest.fixture
def flushes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times an `SseWriter` flushed (what it put for a later loop turn, or its held head)."""
    count = [0]
    real = sse_wire.SseWriter._flush

    def counted(self: sse_wire.SseWriter) -> None:
        count[0] += 1
        real(self)

    monkeypatch.setattr(sse_wire.SseWriter, "_flush", counted)
    return count


@pytest.mark.parametrize("mode", ["sse", "resumable"])
async def test_a_def_tools_sse_answer_is_one_write_from_head_to_end(
    mode: str, monkeypatch: pytest.MonkeyPatch, outs: list[tuple[str, bytes]], flushes: list[int]
) -> None:
    monkeypatch.setattr(sse_wire, "HOLD", 60.0)  # the head waits for the answer however slow the worker
    tools = Tools()
    async with in_mode(tools, mode) as (url, _, client, headers):
        outs.clear()
        with anyio.fail_after(10):
            response = await client.post(url, json=call("echo", {"text": "one"}, rid=2), headers=headers)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert messages(response.text) == [
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "one"}]}}
    ]
    assert [kind for kind, _ in outs] == ["end"]  # head, priming event, answer and end: one write
    primed = [sorted(e) for e in sse_events(outs[0][1].decode())]
    answer = ["data", "event"] if mode == "sse" else ["data", "event", "id"]
    assert primed == ([answer] if mode == "sse" else [["data", "id", "retry"], answer])
    assert flushes == [0]  # nothing waited for a loop turn of its own, nor for the hold


async def test_an_event_before_the_answer_sends_the_held_head_at_once(
    monkeypatch: pytest.MonkeyPatch, outs: list[tuple[str, bytes]]
) -> None:
    monkeypatch.setattr(sse_wire, "HOLD", 60.0)  # only the event can send the head within the test
    tools = Tools()
    async with in_mode(tools, "resumable") as (url, _, client, headers):
        outs.clear()
        with anyio.fail_after(10):
            response = await post_streamed(client, url, headers, call("note", rid=3))
            try:
                chunks = response.aiter_raw()
                got = await read_raw(
                    chunks, lambda read: b"notifications/message" in read and read.endswith(b"\n\n")
                )
                assert not tools.gate.is_set()
                tools.gate.set()
                got += b"".join([chunk async for chunk in chunks])
            finally:
                await response.aclose()
    assert [m.get("method") for m in messages(got.decode())] == ["notifications/message", None]
    assert [kind for kind, _ in outs] == ["write", "end"]
    assert b"retry:" in outs[0][1]  # the priming event went out with the log, under the head


@pytest.mark.parametrize("mode", ["sse", "resumable"])
async def test_a_quiet_streams_head_goes_out_after_the_hold(
    mode: str, monkeypatch: pytest.MonkeyPatch, outs: list[tuple[str, bytes]]
) -> None:
    monkeypatch.setattr(sse_wire, "HOLD", 0.01)
    tools = Tools()
    async with in_mode(tools, mode) as (url, _, client, headers):
        outs.clear()
        with anyio.fail_after(10):
            # the head came, the tool still waits
            response = await post_streamed(client, url, headers, call("hold", {"text": "q"}, rid=4))
            try:
                assert response.headers["content-type"].startswith("text/event-stream")
                assert not tools.gate.is_set()
                if mode == "sse":  # the head alone: no priming event without a store
                    assert outs == [("write", b"")]
                else:  # the head with the priming event
                    assert [kind for kind, _ in outs] == ["write"]
                    assert outs[0][1].startswith(b"id: ")
                tools.gate.set()
                rest = b"".join([chunk async for chunk in response.aiter_raw()])
            finally:
                await response.aclose()
    assert messages(rest.decode())[-1]["result"]["content"] == [{"type": "text", "text": "q"}]
    assert [kind for kind, _ in outs] == ["write", "end"]


async def test_a_client_leaving_before_the_head_went_out_cancels_its_handler_once(
    monkeypatch: pytest.MonkeyPatch, outs: list[tuple[str, bytes]]
) -> None:
    monkeypatch.setattr(sse_wire, "HOLD", 60.0)
    tools = Tools()
    async with in_mode(tools, "sse") as (url, app, client, headers):
        outs.clear()
        host, port = url.split("/")[2].split(":")
        with anyio.fail_after(10):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(raw_post(url, headers, call("hold", {"text": "x"}, rid=5)))
            await tools.entered.wait()
            writer.close()  # the client leaves; nothing was written to it yet
            await until(lambda: tools.cancelled == 1 and app.posts.admission.running == 0)
            assert outs == []  # nothing was written to the client that left
            again = await client.post(url, json=call("echo", {"text": "on"}, rid=6), headers=headers)
    assert messages(again.text)[-1]["result"]["content"] == [{"type": "text", "text": "on"}]
    assert tools.cancelled == 1
    assert not await reader.read()  # the server wrote nothing on that connection
