"""What a `Stream` keeps before a response attaches (its backlog) is bounded.

A client that takes JSON only (`Stream.for_client(sse=False)`) can never receive a frame that is not a
response, so none is kept for it, however many the handler sends; for a client that takes SSE, past
`SSE_HIGH_WATER` bytes the producer of what is not a response waits (as over the SSE pipe) until a response
attaches or the stream ends, and nothing is dropped; a stream not told (the proxy's) keeps all, waits
never. No clock: driven by the loop's own steps. The end-to-end checks run a tool that logs far more than
the mark on both HTTP servers.
"""

from __future__ import annotations

import asyncio

import anyio
import pytest

from mcpframe.http.pipe import SSE_HIGH_WATER
from mcpframe.http.streams import Stream
from mcpframe.server import Context

from ._live_support import GatedTools, serving
from ._server_support import call, messages

pytestmark = pytest.mark.anyio

KIB = 1024
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _note(n: int) -> bytes:
    """A notification of exactly 1 KiB, numbered `n`."""
    head = NOTE % (b"%06d" % n)
    return head.replace(b"%06d" % n, b"%06d" % n + b"x" * (KIB - len(head)))


async def _steps(count: int = 10) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def _emit_all(stream: Stream, count: int, done: list[int]) -> None:
    for n in range(count):
        await stream.emit(_note(n), response=False)
        done.append(n)


async def test_a_json_only_stream_keeps_only_responses() -> None:
    stream = Stream(None, None)
    stream.for_client(sse=False)
    with anyio.fail_after(10):
        for n in range(4 * SSE_HIGH_WATER // KIB):  # four times the mark: nothing waits
            await stream.emit(_note(n), response=False)
    await stream.emit(ANSWER, response=True)
    assert stream.saw_other  # what was sent still counts as sent (an SSE client would be switched)
    stream.finish()
    assert stream.response_frames() == [ANSWER]
    assert stream.finished_body(retry_ms=None) == b"event: message\ndata: " + ANSWER + b"\n\n"


async def test_past_the_mark_a_producer_waits_until_a_response_attaches() -> None:
    stream = Stream(None, None)
    stream.for_client(sse=True)
    count = SSE_HIGH_WATER // KIB + 8
    done: list[int] = []
    await stream.emit(ANSWER, response=True)  # a response is kept, and counts, but never waits
    producer = asyncio.ensure_future(_emit_all(stream, count, done))
    await _steps()
    # the frame that took the backlog to the mark is kept, then its producer waits
    assert len(done) == (SSE_HIGH_WATER - len(ANSWER)) // KIB
    assert not producer.done()
    assert stream.wake.is_set()  # before it waited: what attaches a response is woken by it
    pipe = await stream.attach(retry_ms=None)
    got = b""
    with anyio.fail_after(10):
        while not producer.done():  # now the SSE pipe's own bound: the reader lets it go on
            chunk = await pipe.get()
            assert chunk
            got += chunk
    stream.finish()
    while chunk := await pipe.get():
        got += chunk
    assert done == list(range(count))
    events = [line[len(b"data: ") :] for line in got.split(b"\n") if line.startswith(b"data: ")]
    assert events == [ANSWER, *(_note(n) for n in range(count))]  # nothing dropped, in order


async def test_the_end_of_the_stream_lets_a_waiting_producer_go_on() -> None:
    stream = Stream(None, None)
    stream.for_client(sse=True)
    done: list[int] = []
    producer = asyncio.ensure_future(_emit_all(stream, SSE_HIGH_WATER // KIB + 1, done))
    await _steps()
    assert not producer.done()
    stream.finish()  # the exchange ended (cancelled, or its session closed)
    await _steps()
    assert producer.done()
    assert producer.exception() is None


async def test_a_stream_not_told_what_its_client_takes_keeps_all_and_never_waits() -> None:
    stream = Stream(None, None)
    count = 2 * SSE_HIGH_WATER // KIB
    with anyio.fail_after(10):
        for n in range(count):
            await stream.emit(_note(n), response=False)
    stream.finish()
    assert stream.finished_body(retry_ms=None) == b"".join(
        b"event: message\ndata: " + _note(n) + b"\n\n" for n in range(count)
    )


class _Chatty(GatedTools):
    def __init__(self) -> None:
        super().__init__("chatty")

        @self.server.tool
        async def chatter(count: int, ctx: Context) -> str:
            """Log `count` messages of about 1 KiB, then answer."""
            for n in range(count):
                await ctx.info(f"{n:06d}" + "x" * 1000)
            return "said"


@pytest.mark.parametrize("sse", [False, True], ids=["json only", "sse"])
@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_handler_that_logs_far_past_the_mark_is_answered(http_server: str, sse: bool) -> None:
    """Four times the mark of logs in `auto` mode: a JSON-only client gets its answer alone, an SSE client
    every log in order, then the answer."""
    count = 4 * SSE_HIGH_WATER // KIB
    tools = _Chatty()
    served = serving(tools, http_server, response_mode="auto", stream_after=60.0)
    async with served as (url, _, client, session):
        headers = session if sse else {**session, "accept": "application/json"}
        with anyio.fail_after(20):
            response = await client.post(url, json=call("chatter", {"count": count}, rid=9), headers=headers)
        assert response.status_code == 200
        if not sse:
            assert response.headers["content-type"] == "application/json"
            assert response.json()["result"]["content"] == [{"type": "text", "text": "said"}]
            return
        got = messages(response.text)
        logs = [m["params"]["data"][:6] for m in got if m.get("method") == "notifications/message"]
        assert logs == [f"{n:06d}" for n in range(count)]
        assert got[-1]["id"] == 9
        assert got[-1]["result"]["content"] == [{"type": "text", "text": "said"}]
