"""The holder's side of a relayed legacy POST, in process (no Redis): what bounds the session's input."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from mcpframe.http.legacy_pipe import LegacyTransport
from mcpframe.http.legacy_shared import FULL, GONE, MAX_WAITING, NO_BATCH, OK, SharedLegacy

pytestmark = pytest.mark.anyio


class FakeStore:
    """Records the holder's answers; `answered` is set at each one."""

    timeout = 0.2

    def __init__(self) -> None:
        self.answers: dict[str, bytes] = {}
        self.answered = anyio.Event()

    async def release_legacy(self, session_id: str) -> None:
        pass

    async def ack_legacy(self, nonce: str, status: bytes) -> None:
        self.answers[nonce] = status
        self.answered.set()
        self.answered = anyio.Event()


async def wait_answers(store: FakeStore, count: int) -> None:
    with anyio.fail_after(5):
        while len(store.answers) < count:
            await store.answered.wait()


def holder(tg: Any, session: Any) -> tuple[SharedLegacy, FakeStore]:
    store = FakeStore()
    shared: Any = SimpleNamespace(store=store, manager=SimpleNamespace(spawn=tg.start_soon), legacy=None)
    relay = SharedLegacy(shared, {session.id: session}.get)
    assert shared.legacy == relay.deliver  # the route listener hands legacy bodies to it
    return relay, store


def session(limit: int, version: str | None = "2024-11-05") -> Any:
    transport = LegacyTransport(max_body=limit, max_events=1024)
    return SimpleNamespace(id="s1", version=version, owner=None, transport=transport)


async def test_a_relayed_body_is_queued_or_refused_never_dropped() -> None:
    legacy = session(limit=8)
    async with anyio.create_task_group() as tg:
        relay, store = holder(tg, legacy)
        relay.deliver("s1", b"n1\n-\n1234567\n")  # fits: queued, answered ok
        await wait_answers(store, 1)
        assert store.answers["n1"] == OK
        relay.deliver("s1", b"n2\n-\n89\n")  # the input holds 8 bytes and nobody reads: full in time
        await wait_answers(store, 2)
        assert store.answers["n2"] == FULL
        assert legacy.transport.inbound.size == 8  # what was refused was not queued
        assert await legacy.transport.receive() == b"1234567\n"
        relay.deliver("s1", b"n3\n-\n89\n")  # room again
        relay.deliver("elsewhere", b"n4\n-\n{}\n")  # not held here: another instance answers
        await wait_answers(store, 3)
        assert store.answers == {"n1": OK, "n2": FULL, "n3": OK}
        legacy.transport.end_input()
        relay.deliver("s1", b"n5\n-\n{}\n")  # its stream ended
        await wait_answers(store, 4)
        assert store.answers["n5"] == GONE
        await relay.release(legacy)
        relay.find = {}.get  # forgotten here too; a body relayed just before its key went: 404 at once
        relay.deliver("s1", b"n6\n-\n{}\n")
        await wait_answers(store, 5)
        assert store.answers["n6"] == GONE


async def test_batches_and_the_bound_on_waiting_bodies() -> None:
    legacy = session(limit=4)
    async with anyio.create_task_group() as tg:
        relay, store = holder(tg, legacy)
        relay.deliver("s1", b"b0\nb\n[{},{}]\n")  # no batches on 2024-11-05
        await wait_answers(store, 1)
        assert store.answers["b0"] == NO_BATCH
        relay.deliver("s1", b"f0\n-\n1234\n")  # fills the input
        await wait_answers(store, 2)
        for n in range(MAX_WAITING + 1):  # the last one finds MAX_WAITING waiting: refused at once
            relay.deliver("s1", f"w{n}\n-\nx\n".encode())
        await wait_answers(store, 3)
        assert store.answers[f"w{MAX_WAITING}"] == FULL
        assert relay.waiting["s1"] == MAX_WAITING
        await wait_answers(store, MAX_WAITING + 3)  # the others give up after the feed bound
    assert not relay.waiting
