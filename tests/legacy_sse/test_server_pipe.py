"""The bounded byte queues of a legacy session (`legacy_pipe`): the bound, the writers' order, the end."""

from __future__ import annotations

import anyio
import pytest
from tests._blocked import all_blocked

from mcpframe.http.legacy_pipe import BoundedPipe, LegacyTransport
from mcpframe.transports.base import TransportClosedError

pytestmark = pytest.mark.anyio


async def test_writers_wait_for_room_and_keep_their_order() -> None:
    pipe = BoundedPipe(10)
    order: list[bytes] = []

    async def put(chunk: bytes) -> None:
        assert await pipe.put(chunk)
        order.append(chunk)

    async with anyio.create_task_group() as tg:
        await pipe.put(b"12345678")
        for chunk in (b"aaaa", b"b", b"cc"):  # "b" would fit, but waits behind "aaaa"
            tg.start_soon(put, chunk)
            await all_blocked()
        assert order == []
        assert pipe.get_nowait() == b"12345678"
        with anyio.fail_after(5):
            got = [await pipe.get() for _ in range(3)]
    assert got == [b"aaaa", b"b", b"cc"]
    assert order == [b"aaaa", b"b", b"cc"]
    assert pipe.peak <= 10


async def test_an_empty_queue_takes_one_chunk_longer_than_the_bound() -> None:
    pipe = BoundedPipe(4)
    assert await pipe.put(b"too long")
    assert pipe.peak == 8
    assert pipe.get_nowait() == b"too long"


async def test_close_ends_the_reader_after_the_queue_and_frees_the_writers() -> None:
    pipe = BoundedPipe(4)
    await pipe.put(b"abcd")
    results: list[bool] = []

    async def put() -> None:
        results.append(await pipe.put(b"late"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(put)
        await all_blocked()
        pipe.close()
    assert results == [False]
    assert pipe.get_nowait() == b"abcd"
    assert pipe.get_nowait() == b""
    assert await pipe.put(b"x") is False


async def test_get_times_out_with_none() -> None:
    pipe = BoundedPipe(4)
    assert await pipe.get(0.01) is None


async def test_the_transport_splits_joined_frames_within_the_bound() -> None:
    transport = LegacyTransport(max_body=100, max_events=160)  # two ~70-byte events per piece
    frames = b"".join(b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}\n' % i for i in range(10))
    written: list[bytes] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(transport.send, frames)
        with anyio.fail_after(5):
            while len(written) < 10:
                chunk = await transport.outbound.get()
                assert chunk
                written += [e for e in chunk.split(b"\n\n") if e]
    assert 100 < transport.outbound.peak <= 160  # joined, but never past the bound
    assert written[0] == b'event: message\ndata: {"jsonrpc":"2.0","method":"n","params":{"i":0}}'
    assert len(written) == 10
    await transport.aclose()
    with pytest.raises(TransportClosedError):
        await transport.send(b"{}\n")
    assert await transport.receive() == b""
