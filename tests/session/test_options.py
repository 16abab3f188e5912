"""``SessionOptions``: the Session's knobs as one typed, frozen value, and the README's keywords over it."""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest
from tests.session._support import Handlers, RawPeer

from mcpframe import core, jsonrpc
from mcpframe.errors import PendingLimitError
from mcpframe.session import Request, Session, SessionOptions
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_in_flight", 0),
        ("outbox_high_water", 0),
        ("drain_timeout", -1.0),
        ("timeout", -0.5),
    ],
)
def test_out_of_range_values_are_refused_where_they_are_written(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        SessionOptions(**{field: value})


def test_options_are_frozen_and_keyword_only_and_know_their_fields() -> None:
    options = SessionOptions(max_in_flight=8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_in_flight = 9  # type: ignore[misc]
    with pytest.raises(TypeError):
        SessionOptions(8)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        SessionOptions(max_in_flite=8)  # type: ignore[call-arg]


def test_the_defaults_are_the_documented_ones() -> None:
    options = SessionOptions()
    assert (options.max_in_flight, options.max_pending, options.max_frame) == (
        1024,
        65536,
        core.DEFAULT_MAX_FRAME,
    )
    assert (options.outbox_high_water, options.timeout, options.drain_timeout) == (1 << 20, None, 5.0)


def test_one_value_serves_many_sessions_and_readme_keywords_override_only_their_field() -> None:
    shared = SessionOptions(max_in_flight=5, drain_timeout=1.5, timeout=2.0)
    left, right = memory_pair()
    plain = Session(left, options=shared)
    assert plain.options is shared
    tuned = Session(right, options=shared, max_in_flight=2, outbox_high_water=4096)
    assert tuned.options == dataclasses.replace(shared, max_in_flight=2, outbox_high_water=4096)
    assert (tuned.max_in_flight, tuned.drain_timeout, tuned.timeout) == (2, 1.5, 2.0)
    assert shared.max_in_flight == 5  # the caller's value is never changed


@pytest.mark.parametrize("name", ["options", "max_in_flight", "drain_timeout"])
def test_the_options_are_the_one_place_of_the_knobs(name: str) -> None:
    """The Session keeps no copy that could drift from its options: these read them and refuse a write."""
    left, _ = memory_pair()
    session = Session(left, options=SessionOptions(max_in_flight=3, drain_timeout=0.5))
    before = getattr(session, name)
    with pytest.raises(AttributeError):
        setattr(session, name, before)
    assert (session.max_in_flight, session.drain_timeout) == (3, 0.5)
    assert session.options == SessionOptions(max_in_flight=3, drain_timeout=0.5)


async def test_max_in_flight_from_options_bounds_the_running_handlers() -> None:
    release = anyio.Event()

    async def handler(req: Request) -> Any:
        if req.method == "slow":
            await release.wait()
        return req.method

    left, right = memory_pair()
    peer = RawPeer(left)
    async with Session(right, request_handler=handler, options=SessionOptions(max_in_flight=1)) as session:
        with anyio.fail_after(10):
            await peer.send(core.encode_request(1, "slow") + core.encode_request(2, "echo"))
            while session.backlog != 1:  # the second request waits: one handler runs at most
                await anyio.sleep(0)
            assert session.in_flight == 1
            release.set()
            answers = [await peer.receive(), await peer.receive()]
    assert [(a.id, a.result) for a in answers] == [(1, "slow"), (2, "echo")]


async def test_max_pending_and_max_frame_from_options_reach_the_core() -> None:
    handlers = Handlers()
    left, right = memory_pair()
    peer = RawPeer(left)
    options = SessionOptions(max_pending=1, max_frame=64)
    async with (
        Session(right, request_handler=handlers, options=options) as session,
        anyio.create_task_group() as tg,
    ):
        with anyio.fail_after(10):
            tg.start_soon(session.request, "question")
            asked = await peer.receive()
            with pytest.raises(PendingLimitError):
                await session.request("another")
            await peer.send(core.encode_result(asked.id, "ok"))
            await peer.request(7, "echo", {"pad": "x" * 100})  # over 64 bytes: rejected as it arrives
            refused = await peer.receive()
            assert (refused.kind, refused.error["code"]) == ("error", jsonrpc.INVALID_REQUEST)
            await peer.request(8, "echo", [1])
            assert (await peer.receive()).result == [1]


async def test_the_timeout_from_options_is_settable_on_the_session() -> None:
    left, right = memory_pair()
    peer = RawPeer(left)
    async with Session(right, options=SessionOptions(timeout=0.01)) as session:
        with anyio.fail_after(10):
            with pytest.raises(TimeoutError):
                await session.request("never answered")
            asked, cancelled = await peer.receive(), await peer.receive()
            assert (asked.method, cancelled.method) == ("never answered", "notifications/cancelled")
            assert cancelled.params["requestId"] == asked.id
            session.timeout = None
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.request, "answered")
                asked = await peer.receive()
                await peer.send(core.encode_result(asked.id, "late but fine"))
            assert session.pending == 0
