"""``SuspendRule``: a ``Session.suspends`` given as data, which the Session checks inline (no call). What it
says as a callable and where the Session starts the request must agree, for well-formed params and for
the malformed ones a client can send (a name that is not a string, not even hashable; params that are not an
object); and its ``names`` are read on every request, so a set its owner changes later counts.

Where a request started shows in the step that starts it: eagerly, its handler has run its first step
when ``start_inline`` returns; in a task of its own, not yet. Without an eager start (3.11 with
``MCPFRAME_PUBLIC_ONLY=1``) every request is a task of its own.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pytest
from tests.session.test_inline import Wire, running

from mcpframe import core
from mcpframe.session import Request, Session, SuspendRule
from mcpframe.session.eager import AVAILABLE as EAGER
from mcpframe.session.inline import start_inline
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _message(rid: int, method: str, params: Any) -> Any:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    (decoded,) = core.Decoder().feed(orjson.dumps(body) + b"\n")
    return decoded


class Ran:
    """A handler that records each request id as its first step runs."""

    def __init__(self) -> None:
        self.ran: list[Any] = []

    async def __call__(self, request: Request) -> Any:
        self.ran.append(request.id)
        return "ok"


async def _started_eagerly(session: Session, wire: Wire, handler: Ran, message: Any) -> bool:
    """Start ``message`` inline; whether its handler ran in that step. Then let it answer."""
    start_inline(session, message, wire.deliver)
    eagerly = handler.ran == [message.id]
    with anyio.fail_after(5):
        while message.id in session._incoming:
            await anyio.lowlevel.checkpoint()
    handler.ran.clear()
    return eagerly


@pytest.mark.parametrize(
    ("method", "params", "suspends"),
    [
        ("call", {"name": "slow"}, True),
        ("call", {"name": "slow", "other": 1}, True),
        ("call", {"name": "fast"}, False),
        ("call", {"name": 3}, False),
        ("call", {"name": ["slow"]}, False),  # not hashable: no error either
        ("call", {"name": {"slow": 1}}, False),
        ("call", {}, False),
        ("call", ["slow"], False),
        ("call", None, False),
        ("other", {"name": "slow"}, False),
    ],
)
async def test_the_session_starts_a_request_where_its_rule_says(
    method: str, params: Any, suspends: bool
) -> None:
    rule = SuspendRule("call", "name", {"slow"})
    message = _message(1, method, params)
    assert rule(Request(Session(memory_pair()[0]), message)) is suspends
    wire, handler = Wire(), Ran()
    async with running(Session(wire, request_handler=handler)) as session:
        session.suspends = rule
        assert session.suspends is rule
        assert await _started_eagerly(session, wire, handler, message) is (EAGER and not suspends)
    assert [m.id for m in wire.messages()] == [1]


async def test_a_rule_reads_its_names_on_every_request() -> None:
    names: set[str] = set()
    wire, handler = Wire(), Ran()
    async with running(Session(wire, request_handler=handler)) as session:
        session.suspends = SuspendRule("call", "name", names)
        assert await _started_eagerly(session, wire, handler, _message(1, "call", {"name": "t"})) is EAGER
        names.add("t")
        assert await _started_eagerly(session, wire, handler, _message(2, "call", {"name": "t"})) is False
        names.discard("t")
        assert await _started_eagerly(session, wire, handler, _message(3, "call", {"name": "t"})) is EAGER
        session.suspends = None
        assert session.suspends is None
        names.add("t")
        assert await _started_eagerly(session, wire, handler, _message(4, "call", {"name": "t"})) is EAGER
    assert [m.id for m in wire.messages()] == [1, 2, 3, 4]
