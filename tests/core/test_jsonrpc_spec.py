"""The examples of the JSON-RPC 2.0 specification, restated as tables.

Each request the spec shows is decoded (kind, id, method, params) and each response it shows is decoded
(kind, id, result or error code). Where the spec's server answers an invalid request, the decoder's
``FrameError`` must carry the same code and id, and ``to_response()`` must be a well-formed reply.
The spec's human-readable error messages are its own; ours are the contract's.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

# (request frame, (kind, id, method, params)), (response frame, (kind, id, result, error code))
PAIRS = [
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}',
        ("request", 1, "subtract", [42, 23]),
        b'{"jsonrpc": "2.0", "result": 19, "id": 1}',
        ("result", 1, 19, None),
        id="positional-params",
    ),
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}',
        ("request", 2, "subtract", [23, 42]),
        b'{"jsonrpc": "2.0", "result": -19, "id": 2}',
        ("result", 2, -19, None),
        id="positional-params-2",
    ),
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}',
        ("request", 3, "subtract", {"subtrahend": 23, "minuend": 42}),
        b'{"jsonrpc": "2.0", "result": 19, "id": 3}',
        ("result", 3, 19, None),
        id="named-params",
    ),
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}',
        ("request", 4, "subtract", {"minuend": 42, "subtrahend": 23}),
        b'{"jsonrpc": "2.0", "result": 19, "id": 4}',
        ("result", 4, 19, None),
        id="named-params-2",
    ),
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "foobar", "id": "1"}',
        ("request", "1", "foobar", None),
        b'{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}',
        ("error", "1", None, -32601),
        id="method-not-found",
    ),
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}',
        ("request", "1", "sum", [1, 2, 4]),
        b'{"jsonrpc": "2.0", "result": 7, "id": "1"}',
        ("result", "1", 7, None),
        id="batch-sum",
    ),
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "get_data", "id": "9"}',
        ("request", "9", "get_data", None),
        b'{"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}',
        ("result", "9", ["hello", 5], None),
        id="get-data",
    ),
]

NOTIFICATIONS = [
    pytest.param(b'{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}', "update", [1, 2, 3, 4, 5]),
    pytest.param(b'{"jsonrpc": "2.0", "method": "foobar"}', "foobar", None),
    pytest.param(b'{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}', "notify_hello", [7]),
    pytest.param(b'{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]}', "notify_sum", [1, 2, 4]),
]


def request_view(message: Any) -> tuple[object, ...]:
    return (message.kind, message.id, message.method, message.params)


def response_view(message: Any) -> tuple[object, ...]:
    code = message.error["code"] if message.error is not None else None
    return (message.kind, message.id, message.result, code)


PAIR_CASES = [pytest.param(p.values[:2], p.values[2:], id=p.id) for p in PAIRS]


@pytest.mark.parametrize(("sent", "answered"), PAIR_CASES)
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_request_response_pairs(
    backend: ModuleType, lazy: bool, sent: tuple[Any, ...], answered: tuple[Any, ...]
) -> None:
    request_frame, request = sent
    response_frame, response = answered
    req, resp = backend.Decoder(lazy=lazy).feed(request_frame + b"\n" + response_frame + b"\n")
    assert request_view(req) == request
    assert response_view(resp) == response
    assert (req.raw, resp.raw) == (request_frame, response_frame)


@pytest.mark.parametrize(("frame", "method", "params"), NOTIFICATIONS)
def test_notifications(backend: ModuleType, frame: bytes, method: str, params: object) -> None:
    (message,) = backend.decode(frame)
    assert request_view(message) == ("notification", None, method, params)


def reply(error: Any) -> dict[str, Any]:
    """The parsed ``to_response()`` line, checked to be exactly one NDJSON line."""
    line = error.to_response()
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    parsed: dict[str, Any] = json.loads(line)
    return parsed


# The spec's invalid inputs: (frame, [(code, id)] one per reply the spec's server sends).
INVALID = [
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]', [(-32700, None)], id="invalid-json"
    ),
    pytest.param(b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}', [(-32600, None)], id="invalid-request"),
    pytest.param(
        b'[\n  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},\n'
        b'  {"jsonrpc": "2.0", "method"\n]',
        [(-32700, None)],
        id="batch-invalid-json",
    ),
    pytest.param(b"[]", [(-32600, None)], id="empty-array"),
    pytest.param(b"[1]", [(-32600, None)], id="batch-of-one-non-object"),
    pytest.param(b"[1,2,3]", [(-32600, None)] * 3, id="batch-of-three-non-objects"),
]


@pytest.mark.parametrize(("body", "replies"), INVALID)
def test_invalid_inputs(backend: ModuleType, body: bytes, replies: list[tuple[int, None]]) -> None:
    errors = backend.decode(body)  # the batch example is pretty-printed: one body, one frame
    assert [(e.code, e.id) for e in errors] == replies
    for error in errors:
        parsed = reply(error)
        assert parsed["jsonrpc"] == "2.0"
        assert parsed["id"] is None
        assert parsed["error"] == {"code": error.code, "message": error.message}


def test_invalid_request_without_id_is_answered(backend: ModuleType) -> None:
    # The spec's own example (section 7): an invalid Request object is no notification, even without
    # an "id": it is answered with -32600 and id null. `notification` is False, so a server answers.
    frame = b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}'
    (error,) = backend.decode(frame)
    assert (error.code, error.id, error.notification, error.raw) == (-32600, None, False, frame)
    assert error.message == 'Invalid Request: "method" must be a string'
    parsed = reply(error)
    assert (parsed["jsonrpc"], parsed["id"], parsed["error"]["code"]) == ("2.0", None, -32600)
    assert parsed["error"]["message"].startswith("Invalid Request")


MIXED_BATCH = b"""[
    {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
    {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
    {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
    {"foo": "boo"},
    {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
    {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
]"""

MIXED_RESPONSES = b"""[
    {"jsonrpc": "2.0", "result": 7, "id": "1"},
    {"jsonrpc": "2.0", "result": 19, "id": "2"},
    {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
    {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"},
    {"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}
]"""


def test_mixed_batch(backend: ModuleType) -> None:
    items = backend.decode(MIXED_BATCH)
    assert [getattr(i, "kind", "FrameError") for i in items] == [
        "request",
        "notification",
        "request",
        "FrameError",
        "request",
        "request",
    ]
    assert [i.batch for i in items] == [0, 1, 2, 3, 4, 5]
    assert [i.id for i in items] == ["1", None, "2", None, "5", "9"]
    invalid = items[3]
    assert (invalid.code, invalid.message, invalid.preview) == (
        -32600,
        'Invalid Request: missing "jsonrpc"',
        b'{"foo": "boo"}',
    )
    assert invalid.offset == MIXED_BATCH.index(b'{"foo"')
    assert reply(invalid)["id"] is None
    assert items[4].params == {"name": "myself"}


def test_mixed_batch_responses(backend: ModuleType) -> None:
    items = backend.decode(MIXED_RESPONSES)
    assert [response_view(i) for i in items] == [
        ("result", "1", 7, None),
        ("result", "2", 19, None),
        ("error", None, None, -32600),
        ("error", "5", None, -32601),
        ("result", "9", ["hello", 5], None),
    ]


def test_all_notifications_batch(backend: ModuleType) -> None:
    body = (
        b'[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},'
        b'{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]'
    )
    items = backend.decode(body)
    assert [request_view(i) for i in items] == [
        ("notification", None, "notify_sum", [1, 2, 4]),
        ("notification", None, "notify_hello", [7]),
    ]


def test_spec_responses_round_trip_through_encoders(backend: ModuleType) -> None:
    lines = (
        backend.encode_result(1, 19)
        + backend.encode_error("1", -32601, "Method not found")
        + backend.encode_error(None, -32700, "Parse error")
    )
    assert [response_view(m) for m in backend.Decoder().feed(lines)] == [
        ("result", 1, 19, None),
        ("error", "1", None, -32601),
        ("error", None, None, -32700),
    ]


def test_invalid_notifications_in_a_batch_are_each_answered(backend: ModuleType) -> None:
    # Each invalid element is an Invalid Request of its own; the valid notification stays unanswered.
    elements = [
        b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}',
        b'{"jsonrpc": "2.0", "method": "notify"}',
        b'{"method": "no_version"}',
        b'{"jsonrpc": "2.0", "method": "m", "params": 3}',
    ]
    frame = b"[" + b", ".join(elements) + b"]"
    first, note, second, third = backend.decode(frame)
    assert (note.kind, note.batch) == ("notification", 1)
    errors = [first, second, third]
    assert [(e.code, e.id, e.notification, e.batch) for e in errors] == [
        (-32600, None, False, 0),
        (-32600, None, False, 2),
        (-32600, None, False, 3),
    ]
    assert [e.raw for e in errors] == [elements[0], elements[2], elements[3]]
    assert [reply(e)["id"] for e in errors] == [None, None, None]
