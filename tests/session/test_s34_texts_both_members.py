"""A stdio frame with both ``result`` and ``error`` (a response, so never answered) is logged through the
session's rejection log with its id, which the frame's preview may not show: a long ``result`` first."""

from __future__ import annotations

import anyio
import pytest
from tests.session._support import Handlers, raw_session
from tests.session.test_rejection_flood import _Records, records

from mcpframe import core

pytestmark = pytest.mark.anyio

__all__ = ["records"]  # the fixture, used by name

BOTH = [
    pytest.param(b'{"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"x"}}', 5, id="int-id"),
    pytest.param(
        b'{"jsonrpc":"2.0","result":"%s","error":{"code":1,"message":"x"},"id":"late"}' % (b"r" * 500),
        "late",
        id="id-past-preview",
    ),
]


@pytest.mark.parametrize(("frame", "rid"), BOTH)
async def test_a_response_with_result_and_error_is_logged_with_its_id_and_not_answered(
    frame: bytes, rid: int | str, records: _Records
) -> None:
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (_, peer):
            await peer.send(frame + b"\n" + core.encode_request("last", "echo", {"n": 1}))
            answer, before = await peer.until("last")
    assert answer.result == {"n": 1}
    assert before == []  # a response gets no response
    [message] = records.messages
    assert message.startswith("rejected frame at stream byte 0: ")
    assert 'cannot have both "result" and "error"' in message
    assert f"(code -32600, id {rid!r})" in message
