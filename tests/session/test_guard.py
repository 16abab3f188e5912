"""A session never dies silently: a decoder failure, a frame that blows up in dispatch, a broken transport.

The decoder is replaced (monkeypatched) by one that raises where a frame holds a marker, standing in for a
decoder bug (the native decoder once raised ``ValueError`` out of ``feed`` on a 4,301-digit integer).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.session._support import EAGER_START, RawPeer

from mcpframe import core, jsonrpc
from mcpframe.session import JSONRPCError, Request, Session
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio

BOOM = b'"boom"'


class _Exploding:
    """A decoded request whose params cannot be built (what a lazy ``.params`` bug looks like)."""

    def __init__(self, message: Any) -> None:
        self._message = message

    def __getattr__(self, name: str) -> Any:
        if name == "params":
            raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")
        return getattr(self._message, name)


class FaultyDecoder:
    """The real decoder, except that a chunk holding ``"boom"`` raises and ``"fuse"`` params explode."""

    real = core.Decoder

    def __init__(self, **options: Any) -> None:
        self._inner = FaultyDecoder.real(**options)

    def feed(self, data: bytes) -> list[Any]:
        if BOOM in bytes(data):
            raise ValueError("decoder bug")
        return [
            _Exploding(item) if b'"fuse"' in getattr(item, "raw", b"") else item
            for item in self._inner.feed(data)
        ]

    def close(self) -> list[Any]:
        return self._inner.close()


@asynccontextmanager
async def hosted(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[RawPeer, Session]]:
    monkeypatch.setattr(core, "Decoder", FaultyDecoder)

    async def handler(req: Request) -> Any:
        return req.params

    left, right = memory_pair()
    session = Session(right, request_handler=handler)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        with anyio.fail_after(10):
            yield RawPeer(left), session
        await session.aclose()


async def test_a_chunk_the_decoder_fails_on_loses_only_the_failing_frame(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with hosted(monkeypatch) as (peer, _):
        chunk = (
            core.encode_request(1, "echo", {"n": 1})
            + b'{"jsonrpc":"2.0","id":2,"method":"echo","params":"boom"}\n'
            + core.encode_request(3, "echo", {"n": 3})
            + b'{"jsonrpc":"2.0","id":4,"meth'  # unfinished: completed by the next chunk
        )
        await peer.send(chunk)
        await peer.send(b'od":"echo","params":{"n":4}}\n')
        answers = [await peer.receive() for _ in range(4)]
        assert [(a.id, a.result) for a in answers if a.kind == "result"] == [
            (1, {"n": 1}),
            (3, {"n": 3}),
            (4, {"n": 4}),
        ]
        (failed,) = [a for a in answers if a.kind == "error"]
        assert failed.id is None
        assert failed.error["code"] == jsonrpc.INTERNAL_ERROR
        await peer.request(5, "echo", ["alive"])
        assert (await peer.receive()).result == ["alive"]
    assert any("decoder failed" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)


async def test_a_request_that_blows_up_while_dispatched_is_answered_and_the_chunk_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with hosted(monkeypatch) as (peer, _):
        chunk = (
            core.encode_request(1, "echo", {"n": 1})
            + core.encode_request(2, "echo", {"x": "fuse"})
            + core.encode_notification("note", {"x": "fuse"})
            + core.encode_request(3, "echo", {"n": 3})
        )
        await peer.send(chunk)
        answers = [await peer.receive() for _ in range(3)]
        by_id = {a.id: a for a in answers}
        assert sorted(by_id) == [1, 2, 3]  # each answered once, the chunk went on past the one that blew up
        assert (by_id[1].result, by_id[3].result) == ({"n": 1}, {"n": 3})
        assert by_id[2].kind == "error"
        assert by_id[2].error == {"code": jsonrpc.INTERNAL_ERROR, "message": "Internal error (ValueError)"}
        if EAGER_START:  # 1 answered within the dispatch, before 2 failed; else 1 answers from its own task
            assert [a.id for a in answers] == [1, 2, 3]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert any("id 2" in r.getMessage() for r in errors)


class BrokenTransport:
    """Reading raises something no transport should: a bug below the session."""

    async def receive(self) -> bytes:
        raise RuntimeError("the transport fell over")

    async def send(self, data: bytes) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def test_a_session_that_ends_because_of_an_error_logs_why_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = Session(BrokenTransport())
    with anyio.fail_after(10), pytest.raises(ExceptionGroup) as raised:
        await session.run()
    assert raised.group_contains(RuntimeError, match="fell over")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "mcpframe.session"]
    assert len(errors) == 1
    assert "unexpected error" in errors[0].getMessage()
    assert errors[0].exc_info is not None


class ResetTransport(BrokenTransport):
    async def receive(self) -> bytes:
        raise ConnectionResetError("reset by peer")


async def test_a_session_whose_reading_fails_ends_and_logs_why_once(caplog: pytest.LogCaptureFixture) -> None:
    session = Session(ResetTransport())
    with anyio.fail_after(10):
        await session.run()  # a broken connection is the end of the connection, not a crash
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "mcpframe.session"]
    assert [r.getMessage() for r in errors] == [
        "the session ended: reading from the peer failed: reset by peer"
    ]


async def test_an_error_whose_data_cannot_be_encoded_is_answered_without_it() -> None:
    async def handler(req: Request) -> Any:
        raise JSONRPCError(-32602, "bad params", {"why": object()})

    left, right = memory_pair()
    session = Session(right, request_handler=handler)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        peer = RawPeer(left)
        with anyio.fail_after(10):
            await peer.send(core.encode_request(1, "x") + core.encode_request(2, "x"))
            answers = [await peer.receive(), await peer.receive()]
        await session.aclose()
    assert [(a.id, a.error) for a in answers] == [
        (rid, {"code": -32602, "message": "bad params"}) for rid in (1, 2)
    ]
