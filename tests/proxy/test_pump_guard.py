"""With the thread pump on the python core, the relays share a python `IdMap` whose methods are several
steps each: closing a client's relay or the upstream's reader takes `Forwarder.guard` like feeding them."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcpframe.proxy.forward import Forwarder, UpstreamLink

pytestmark = pytest.mark.anyio


class _Spy:
    """Wraps a relay or reader; records whether `guard` was held when `close` was called."""

    def __init__(self, inner: Any, guard: threading.RLock) -> None:
        self._inner = inner
        self._guard = guard
        self.held: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> Any:
        self.held.append(self._guard._is_owned())  # type: ignore[attr-defined]
        return self._inner.close()


async def _connect() -> UpstreamLink:
    raise AssertionError("no upstream in this test")


def _forwarder() -> tuple[Forwarder, threading.RLock]:
    forwarder = Forwarder(_connect)
    guard = forwarder.guard or threading.RLock()  # the native core has none: as if it were the python one
    forwarder.guard = guard
    return forwarder, guard


async def _send(data: bytes) -> None:
    raise AssertionError(f"nothing to send: {data!r}")


async def test_the_end_of_a_clients_input_closes_its_relay_under_the_guard() -> None:
    forwarder, guard = _forwarder()
    session = forwarder.open_session(_send)
    spy = _Spy(session._relay, guard)
    session._relay = spy  # type: ignore[assignment]
    await session.end()
    assert spy.held == [True]


async def test_the_upstreams_reader_is_closed_under_the_guard() -> None:
    forwarder, guard = _forwarder()
    spy = _Spy(forwarder._new_reader(), guard)
    assert forwarder._close_reader(spy) == ([], [])  # type: ignore[arg-type]
    assert spy.held == [True]
