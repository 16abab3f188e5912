"""The ``data`` of the answer to a refused frame is the same on both backends: a parse error's and an
invalid request's (``-32600``: where its frame, or its batch element, starts in the stream), for random
streams. The answer is built from the core's ``FrameError`` (``session.batch.error_answer``), so this
checks the offsets and the rest of what it reads agree, not only the ``FrameError`` fields one by one."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings

from mcpframe import jsonrpc
from mcpframe.session.batch import error_answer

from ._support import stream
from .strategies import streams

fixtures_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def answers(backend: Any, data: bytes) -> list[Any]:
    """The ``error`` member of the answer to each refused frame of ``data`` (batches on)."""
    out = []
    for item in stream(backend, data, batches=True):
        if isinstance(item, backend.FrameError):
            out.append(json.loads(error_answer(item))["error"])
    return out


@fixtures_ok
@given(data=streams())
def test_both_backends_answer_a_refused_frame_with_the_same_data(both_backends: Any, data: bytes) -> None:
    native, python = answers(both_backends.native, data), answers(both_backends.python, data)
    assert native == python
    for error in native:
        if error["code"] in (jsonrpc.INVALID_REQUEST, jsonrpc.PARSE_ERROR):
            assert isinstance(error["data"]["offset"], int)


def test_an_invalid_request_says_where_its_frame_starts_on_both_backends(both_backends: Any) -> None:
    good = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    bad = [
        b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":2,"method":7}',
        b'{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"x"}}',
        b'{"id":4,"method":"ping"}',
    ]
    data = good + b"\r\n\n".join(bad) + b"\n"
    starts = [data.index(frame) for frame in bad]
    for backend in both_backends:
        errors = answers(backend, data)
        assert [e["code"] for e in errors] == [jsonrpc.INVALID_REQUEST] * len(bad)
        assert [e["data"] for e in errors] == [{"offset": start} for start in starts]


def test_an_invalid_batch_element_says_where_it_starts_on_both_backends(both_backends: Any) -> None:
    element = b'{"jsonrpc":"2.0","id":true,"method":"ping"}'
    data = b'\xef\xbb\xbf[{"jsonrpc":"2.0","id":1,"method":"ping"}, ' + element + b"]\n"
    for backend in both_backends:
        errors = answers(backend, data)
        assert [(e["code"], e["data"]) for e in errors] == [
            (jsonrpc.INVALID_REQUEST, {"offset": data.index(element)})
        ]
