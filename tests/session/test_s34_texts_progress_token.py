"""A ``_meta.progressToken`` that is no string or integer (an array, an object, a boolean, a float) is
ignored as an odd ``_meta`` is (the request runs, no progress is sent for it), and the session's
rate-limited rejection log says so, naming the request; a string, an integer or a null token is not
logged."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.session._support import Handlers, raw_session
from tests.session.test_rejection_flood import _Records, records

from mcpframe import core
from mcpframe.session import Request

pytestmark = pytest.mark.anyio

__all__ = ["records"]  # the fixture, used by name

ODD = [
    pytest.param([1], "an array", id="array"),
    pytest.param({"t": 1}, "an object", id="object"),
    pytest.param(True, "a boolean", id="bool"),
    pytest.param(1.5, "a float", id="float"),
]


class _Tokens(Handlers):
    """Records the progress token each request was given."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[Any] = []

    async def m_tools_call(self, request: Request) -> Any:
        self.tokens.append(request.progress_token)
        return {"ok": True}


async def _call(token: Any) -> tuple[Any, list[Any]]:
    handlers = _Tokens()
    with anyio.fail_after(10):
        async with raw_session(handlers) as (_, peer):
            await peer.send(core.encode_request("r1", "tools/call", {"_meta": {"progressToken": token}}))
            answer = await peer.receive()
    return answer, handlers.tokens


@pytest.mark.parametrize(("token", "kind"), ODD)
async def test_an_odd_progress_token_is_ignored_and_logged(token: Any, kind: str, records: _Records) -> None:
    answer, tokens = await _call(token)
    assert (answer.id, answer.result) == ("r1", {"ok": True})
    assert tokens == [None]  # no progress is sent for it
    assert records.messages == [
        f"ignored the progressToken of request 'tools/call' (id 'r1'): {kind}, not a string or an integer"
        " (no progress is sent for it)"
    ]


@pytest.mark.parametrize("token", ["t", 7, None], ids=["string", "integer", "null"])
async def test_a_string_integer_or_null_token_is_not_logged(token: Any, records: _Records) -> None:
    answer, tokens = await _call(token)
    assert answer.result == {"ok": True}
    assert tokens == [token]
    assert records.messages == []
