"""`ThreadWriter` (the thread pump's destination): a loop write the destination took only in part keeps
it reserved until its rest is written, so a pump thread's frame never lands inside it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import anyio
import anyio.to_thread
import pytest

from mcpframe.proxy.pump import ThreadWriter
from mcpframe.transports.base import TransportClosedError

pytestmark = pytest.mark.anyio

LOOP_FRAME = b"A" * 20000 + b"\n"
THREAD_FRAME = b"B" * 50 + b"\n"


class _Signalling(threading.Condition):
    """A condition that tells the test when a thread starts waiting on it (no sleep needed)."""

    def __init__(self) -> None:
        super().__init__(threading.Lock())
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def _watch(writer: ThreadWriter) -> threading.Event:
    """An event set when a thread starts waiting for `writer`'s destination to be free."""
    signalling = _Signalling()
    if hasattr(writer, "_state"):  # (so the test shows the interleaving without it, not a missing name)
        writer._state = signalling
    return signalling.waiting


async def _waiting_or_done(waiting: threading.Event, thread: threading.Thread) -> None:
    """Until `thread` waits for the destination (or, with no reservation to wait for, has written)."""

    def watch() -> None:
        while not waiting.wait(0.01) and thread.is_alive():
            pass

    await anyio.to_thread.run_sync(watch, abandon_on_cancel=True)


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        os.close(fd)


def _drain(r: int, total: int, into: bytearray) -> None:
    while len(into) < total:
        into.extend(os.read(r, 65536))


async def test_a_thread_frame_waits_for_the_rest_of_a_partly_written_loop_frame(
    pipe: tuple[int, int],
) -> None:
    r, w = pipe
    filler = b"." * (65536 - 8192)  # a client that is behind: 8 KiB free in its pipe (Linux's 64 KiB)
    os.write(w, filler)
    with anyio.fail_after(10):
        writer = ThreadWriter(w)
        waiting = _watch(writer)
        rest = writer.write_nowait(LOOP_FRAME)  # the proxy's own big answer (a duplicate-id error)
        assert 0 < len(rest) < len(LOOP_FRAME)  # taken in part: the rest is owed
        data = bytearray()
        total = len(filler) + len(LOOP_FRAME) + len(THREAD_FRAME)
        drain = threading.Thread(target=_drain, args=(r, total, data), daemon=True)
        drain.start()  # the client reads again
        thread = threading.Thread(target=writer.write_blocking, args=(THREAD_FRAME,), daemon=True)
        thread.start()  # the upstream pump thread relays an answer meanwhile
        await _waiting_or_done(waiting, thread)  # ... and must wait for the rest
        await writer.write_rest(rest)
        await anyio.to_thread.run_sync(thread.join, abandon_on_cancel=True)
        await anyio.to_thread.run_sync(drain.join, abandon_on_cancel=True)
        await writer.aclose()
    assert bytes(data[len(filler) :]) == LOOP_FRAME + THREAD_FRAME


async def test_loop_writes_queued_behind_a_rest_go_before_a_later_thread_frame(pipe: tuple[int, int]) -> None:
    r, w = pipe
    filler = b"." * (65536 - 8192)
    os.write(w, filler)
    with anyio.fail_after(10):
        writer = ThreadWriter(w)
        waiting = _watch(writer)
        first = writer.write_nowait(LOOP_FRAME)
        second = writer.write_nowait(b"C" * 10 + b"\n")
        assert second == b"C" * 10 + b"\n"  # queued whole behind the first's rest
        data = bytearray()
        total = len(filler) + len(LOOP_FRAME) + len(second) + len(THREAD_FRAME)
        drain = threading.Thread(target=_drain, args=(r, total, data), daemon=True)
        drain.start()
        thread = threading.Thread(target=writer.write_blocking, args=(THREAD_FRAME,), daemon=True)
        thread.start()
        await _waiting_or_done(waiting, thread)
        async with anyio.create_task_group() as group:
            group.start_soon(writer.write_rest, first)
            group.start_soon(writer.write_rest, second)
        await anyio.to_thread.run_sync(thread.join, abandon_on_cancel=True)
        await anyio.to_thread.run_sync(drain.join, abandon_on_cancel=True)
        await writer.aclose()
    assert bytes(data[len(filler) :]) == LOOP_FRAME + second + THREAD_FRAME


async def test_a_rest_cancelled_before_its_turn_frees_the_destination(pipe: tuple[int, int]) -> None:
    r, w = pipe
    filler = b"." * (65536 - 8192)
    os.write(w, filler)
    with anyio.fail_after(10):
        writer = ThreadWriter(w)
        rest = writer.write_nowait(LOOP_FRAME)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await writer.write_rest(rest)  # cancelled before it took its turn
        os.read(r, 65536)  # room again
        await anyio.to_thread.run_sync(writer.write_blocking, THREAD_FRAME)  # not left waiting
        await writer.aclose()


async def test_aclose_frees_a_thread_waiting_for_an_owed_rest(pipe: tuple[int, int]) -> None:
    _, w = pipe
    os.write(w, b"." * (65536 - 8192))
    with anyio.fail_after(10):
        writer = ThreadWriter(w)
        waiting = _watch(writer)
        writer.write_nowait(LOOP_FRAME)  # its rest is never written
        failed: list[BaseException] = []

        def relay() -> None:
            try:
                writer.write_blocking(THREAD_FRAME)
            except TransportClosedError as exc:
                failed.append(exc)

        thread = threading.Thread(target=relay, daemon=True)
        thread.start()
        await _waiting_or_done(waiting, thread)
        await writer.aclose()
        await anyio.to_thread.run_sync(thread.join, abandon_on_cancel=True)
    assert len(failed) == 1
