"""A frame over the size limit is answered with where it starts and the limit (``data``: ``offset``,
``limit``), and with the request's id when its first bytes show it (``jsonrpc.recover_id`` on the
``preview``), so the request waiting for it ends at once. Its size is not known: it is refused once one
byte past the limit is seen, and skipped to its end."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.session._support import RawPeer

from mcpframe import core, jsonrpc
from mcpframe.session import Session, SessionOptions
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio

LIMIT = 200
PAD = "x" * 400
MESSAGE = f"Invalid Request: frame exceeds the maximum size of {LIMIT} bytes"


async def _answers(data: bytes) -> list[Any]:
    """What a Session with ``max_frame=LIMIT`` answers to ``data``, up to the answer to a last ping."""
    left, right = memory_pair()
    peer = RawPeer(left)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            session = Session(right, options=SessionOptions(max_frame=LIMIT))
            tg.start_soon(session.run)
            await peer.send(data + core.encode_request("last", "ping"))
            _, seen = await peer.until("last")
            await session.aclose()
    return seen


ID_SHOWN = [
    pytest.param(core.encode_request(7, "echo", {"pad": PAD}), 7, id="int"),
    pytest.param(core.encode_request("a-1", "echo", {"pad": PAD}), "a-1", id="str"),
    # a response, or a request whose id is not within the preview: null
    pytest.param(b'{"jsonrpc":"2.0","id":7,"result":{"pad":"%s"}}\n' % PAD.encode(), None, id="response"),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"echo","params":{"pad":"%s"},"id":7}\n' % PAD.encode(), None, id="late"
    ),
    # an id cut at the preview's end may go on: not guessed
    pytest.param(
        b'{"jsonrpc":"2.0","method":"echo","id":' + b"1" * 40 + b',"params":"%s"}\n' % PAD.encode(),
        None,
        id="cut",
    ),
]


@pytest.mark.parametrize(("frame", "rid"), ID_SHOWN)
async def test_an_oversize_frame_is_answered_with_its_id_and_the_limit(frame: bytes, rid: Any) -> None:
    assert len(frame) > LIMIT
    good = core.encode_request(1, "ping")  # answered too (no handler: an error of its own)
    seen = await _answers(good + frame)
    errors = [item for item in seen if item.kind == "error" and item.error["code"] == jsonrpc.INVALID_REQUEST]
    assert len(errors) == 1
    assert errors[0].id == rid
    assert errors[0].error == {
        "code": jsonrpc.INVALID_REQUEST,
        "message": MESSAGE,
        "data": {"offset": len(good), "limit": LIMIT},
    }


async def test_other_invalid_requests_are_answered_as_before() -> None:
    frame = b'{"jsonrpc":"1.0","id":5,"method":"echo"}\n'
    error = core.decode(frame)[0]
    seen = await _answers(frame)
    data = {"offset": error.offset}  # where the frame starts, as a parse error's answer says
    assert [item.raw + b"\n" for item in seen] == [
        core.encode_error(error.id, error.code, error.message, data)
    ]
