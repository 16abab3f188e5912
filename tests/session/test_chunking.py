"""Whatever way the byte stream is cut into chunks, the session answers the same frames the same way."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st

from mcpframe import core
from mcpframe.session import Request, Session


class ScriptedTransport:
    """Delivers fixed chunks, then EOF; records everything sent."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.sent: list[bytes] = []

    async def receive(self) -> bytes:
        await anyio.lowlevel.checkpoint()
        return self.chunks.pop(0) if self.chunks else b""

    async def send(self, data: bytes) -> None:
        self.sent.append(data)

    async def aclose(self) -> None:
        return None


async def echo(req: Request) -> Any:
    await anyio.lowlevel.checkpoint()
    return req.params


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


payloads = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@given(
    st.lists(st.one_of(payloads, st.just(b"garbage{")), min_size=1, max_size=12),
    st.lists(st.integers(min_value=0), max_size=20),
)
def test_chunking_does_not_change_the_answers(items: list[Any], cuts: list[int]) -> None:
    stream = b""
    expected: dict[int, Any] = {}
    bad = 0
    for rid, item in enumerate(items):
        if item == b"garbage{":
            stream += b"garbage{\r\n"
            bad += 1
        else:
            stream += core.encode_request(rid, "echo", {"v": item})
            expected[rid] = {"v": item}
    transport = ScriptedTransport(split(stream, cuts))
    session = Session(transport, request_handler=echo)

    async def main() -> None:
        with anyio.fail_after(10):
            await session.run()

    anyio.run(main)
    decoder = core.Decoder()
    answers = decoder.feed(b"".join(transport.sent)) + decoder.close()
    results = {a.id: a.result for a in answers if a.kind == "result"}
    errors = [a for a in answers if a.kind == "error"]
    assert results == expected
    assert len(errors) == bad
    assert all(e.id is None and e.error["code"] == core.PARSE_ERROR for e in errors)
    assert session.in_flight == 0
    assert session.pending == 0
