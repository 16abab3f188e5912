"""``Relay`` (the proxy's client-to-upstream hot path) and ``IdMap.pending``, on both backends."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpframe.errors import DecoderClosedError


def _req(id: Any, method: str = "tools/call", params: str = '{"name":"x"}') -> bytes:
    return b'{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}' % (
        json.dumps(id).encode(),
        method.encode(),
        params.encode(),
    )


def _note(method: str = "notifications/message", params: str = '{"level":"info"}') -> bytes:
    return b'{"jsonrpc":"2.0","method":"%s","params":%s}' % (method.encode(), params.encode())


def test_plain_frames_are_relayed_with_ids_mapped(backend: ModuleType) -> None:
    ids = backend.IdMap(first_id=41)
    relay = backend.Relay(ids, 5)
    out, held = relay.feed(_req("a") + b"\r\n" + _note() + b"\n" + _req(2**70)[:20])
    assert out == _req(41) + b"\n" + _note() + b"\n"
    assert held == []
    assert relay.feed(_req(2**70)[20:]) == (b"", [])  # no terminator yet
    assert relay.close() == (_req(42) + b"\n", [])
    assert (relay.requests, relay.conn, relay.closed) == (2, 5, True)
    assert ids.pending(5) == [(41, "a"), (42, 2**70)]
    assert ids.pending(6) == []
    with pytest.raises(DecoderClosedError, match="relay is closed"):
        relay.feed(b"\n")


@pytest.mark.parametrize(
    "frame",
    [
        _req(1, "initialize"),
        _req(1, "resources/subscribe", '{"uri":"u"}'),
        _req(1, "resources/unsubscribe", '{"uri":"u"}'),
        _req(1, params='{"_meta":{"progressToken":"t"}}'),
        _req(1, params='{"text":"\\"progressToken\\""}'),  # the bytes are there: the proxy looks closer
        _note("notifications/cancelled", '{"requestId":1}'),
        _note("notifications/initialized", "{}"),
        b'{"jsonrpc":"2.0","id":1,"result":{}}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}',
        b"[" + _req(1) + b"]",
        b'{"jsonrpc":"2.0","id":1,"method":"x"',
        b'{"jsonrpc":"2.0","id":null,"method":"x"}',
        _req(1)[:1] + b"\xef\xbb\xbf" + _req(1)[1:],  # a BOM inside a frame (one before it is dropped)
    ],
)
def test_what_needs_a_decision_is_held_with_all_after_it(backend: ModuleType, frame: bytes) -> None:
    ids = backend.IdMap()
    relay = backend.Relay(ids, 1)
    out, held = relay.feed(_req(1) + b"\n" + frame + b"\n" + _req(2) + b"\n")
    assert out == _req(1) + b"\n"
    start = len(_req(1)) + 1
    assert held == [(start, frame), (start + len(frame) + 1, _req(2))]
    assert len(ids) == 1


def test_duplicates_and_the_limit_are_held(backend: ModuleType) -> None:
    ids = backend.IdMap(max_pending=2)
    relay = backend.Relay(ids, 1)
    n = len(_req(1)) + 1
    assert relay.feed(_req(1) + b"\n" + _req(1) + b"\n") == (_req(1) + b"\n", [(n, _req(1))])
    assert relay.feed(_req(2) + b"\n" + _req(3) + b"\n") == (_req(2) + b"\n", [(3 * n, _req(3))])
    assert relay.requests == 2


def test_oversize_and_a_stream_start_bom(backend: ModuleType) -> None:
    size = len(_req(1))
    relay = backend.Relay(backend.IdMap(), 1, max_frame=size)
    out, held = relay.feed(b"\xef\xbb\xbf" + _req(1) + b"\n" + b"x" * 99 + b"\n" + _note("n", "{}") + b"\n")
    assert out == _req(1) + b"\n"
    (error, note) = held
    assert isinstance(error, backend.FrameError)
    assert (error.code, error.offset, error.preview) == (-32600, 3 + size + 1, b"x" * 64)
    assert error.message == f"Invalid Request: frame exceeds the maximum size of {size} bytes"
    assert note == (3 + size + 1 + 99 + 1, _note("n", "{}"))


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((None, 1), {}, TypeError, "idmap must be an IdMap, not NoneType"),
        (("ids", True), {}, TypeError, "conn must be an int"),
        (("ids", 1), {"max_frame": 0}, ValueError, "max_frame must be at least 1, not 0"),
        (("ids", 1), {"max_frame": 1.5}, TypeError, "max_frame must be an int"),
    ],
)
def test_arguments(
    backend: ModuleType, args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    args = tuple(backend.IdMap() if a == "ids" else a for a in args)
    with pytest.raises(error, match=message):
        backend.Relay(*args, **kwargs)


def test_a_relay_takes_only_its_own_backends_idmap(both_backends: Any) -> None:
    with pytest.raises(TypeError, match="idmap must be an IdMap"):
        both_backends.native.Relay(both_backends.python.IdMap(), 1)
    with pytest.raises(TypeError, match="idmap must be an IdMap"):
        both_backends.python.Relay(both_backends.native.IdMap(), 1)


# ---- both backends, byte for byte, on random streams split anywhere -------------------------------

_ids = st.sampled_from([1, 2, 0, -5, 2**63 - 1, 2**63, 2**64 + 1, "a", "a", "\u00e9", 'q"'])
_frames = st.one_of(
    st.builds(_req, _ids),
    st.builds(_req, _ids, st.sampled_from(["initialize", "ping", "resources/subscribe", "m\\u0070"])),
    st.builds(_req, _ids, st.just("x"), st.sampled_from(['{"_meta":{"progressToken":1}}', "[1]", "{ }"])),
    st.builds(_note, st.sampled_from(["n", "notifications/cancelled", "notifications/progress"])),
    st.sampled_from(
        [
            b'{"jsonrpc":"2.0","id":1,"result":{}}',
            b'{"jsonrpc":"2.0", "id" : "s" ,"method":"x"}',
            b"[]",
            b"not json",
            b"",
            b" \t",
            b"\xef\xbb\xbf",
            b"x" * 90,
            b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"' + b"y" * 80 + b'"}}',
        ]
    ),
)


def _normal(item: Any) -> object:
    if isinstance(item, tuple):
        return item
    return (item.code, item.message, item.offset, item.preview, item.raw)


def _run(backend: ModuleType, chunks: list[bytes]) -> tuple[list[object], list[tuple[int, Any]], int]:
    ids = backend.IdMap(max_pending=6)
    relay = backend.Relay(ids, 3, max_frame=100)
    results: list[object] = []
    for chunk in [*chunks, None]:
        out, held = relay.close() if chunk is None else relay.feed(chunk)
        results.append(out)
        results.append([_normal(item) for item in held])
    return results, ids.pending(3), relay.requests


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=150)
@given(
    frames=st.lists(_frames, max_size=12),
    ends=st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=12, max_size=12),
    bom=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=6),
)
def test_both_backends_relay_the_same_bytes(
    both_backends: Any, frames: list[bytes], ends: list[bytes], bom: bool, cuts: list[int]
) -> None:
    stream = (b"\xef\xbb\xbf" if bom else b"") + b"".join(f + e for f, e in zip(frames, ends, strict=False))
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    native = _run(both_backends.native, chunks)
    assert native == _run(both_backends.python, chunks)
    # what was relayed, whatever the chunking, is what a Decoder + with_id gives for those frames
    relayed = b"".join(item for item in native[0][::2] if isinstance(item, bytes))
    for line in relayed.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_idmap_pending_lists_a_connections_mappings_by_upstream_id(backend: ModuleType) -> None:
    ids = backend.IdMap(first_id=2**63 - 2)
    ids.outbound(1, "a")
    ids.outbound(2, "b")
    ids.outbound(1, 7)  # wraps to 1
    assert ids.pending(1) == [(1, 7), (2**63 - 2, "a")]
    ids.discard(1)
    assert ids.pending(1) == [(2**63 - 2, "a")]
    assert ids.pending(2) == [(2**63 - 1, "b")]
    with pytest.raises(TypeError, match="conn must be an int"):
        ids.pending("1")


# ---- AnswerRelay: the upstream's answers back to their sessions ----------------------------------


def _answer(id: int, result: str = "{}") -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (id, result.encode())


def test_answers_go_back_per_session_with_their_ids(backend: ModuleType) -> None:
    ids = backend.IdMap()
    a, b = ids.outbound(1, "x\u00e9\n"), ids.outbound(2, 2**64)
    c, followed = ids.outbound(1, 7), ids.outbound(2, 8)
    assert ids.hold(followed)
    assert not ids.hold(999)
    assert not ids.hold("s")
    relay = backend.AnswerRelay(ids)
    error = b'{"jsonrpc":"2.0","error":{"code":-1,"message":"m"}, "id" : %d}' % c
    out, held = relay.feed(_answer(b) + b"\n" + _answer(a) + b"\r\n" + error + b"\n" + _answer(followed))
    assert out == [
        (2, b'{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}\n'),
        (
            1,
            b'{"jsonrpc":"2.0","id":"x\\u00e9\\n","result":{}}\n'.replace(b"\\u00e9", "\u00e9".encode())
            + b'{"jsonrpc":"2.0","error":{"code":-1,"message":"m"}, "id" : 7}\n',
        ),
    ]
    assert held == []
    start = len(_answer(b)) + len(_answer(a)) + len(error) + 4
    assert relay.close() == ([], [(start, _answer(followed))])  # held: the proxy follows it
    assert ids.pending(1) == []
    assert ids.pending(2) == [(followed, 8)]


@pytest.mark.parametrize(
    "frame",
    [
        _answer(999),  # unknown: late, cancelled or never the proxy's
        b'{"jsonrpc":"2.0","id":"1","result":{}}',
        b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}',
        b'{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}',
        _note("notifications/progress", '{"progressToken":1,"progress":1}'),
        b"[" + _answer(1) + b"]",
        b"{",
    ],
)
def test_other_upstream_frames_are_held(backend: ModuleType, frame: bytes) -> None:
    ids = backend.IdMap()
    ids.outbound(1, "a")
    ids.outbound(1, "b")
    relay = backend.AnswerRelay(ids)
    out, held = relay.feed(frame + b"\n" + _answer(2) + b"\n")
    assert (out, held) == ([], [(0, frame), (len(frame) + 1, _answer(2))])
    assert len(ids) == 2  # nothing was taken from the map


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=100)
@given(
    answers=st.lists(
        st.tuples(st.integers(min_value=0, max_value=9), st.sampled_from(["{}", "[1, 2]", '"\\u00e9"'])),
        max_size=12,
    ),
    extra=st.lists(_frames, max_size=3),
    held_ids=st.sets(st.integers(min_value=1, max_value=8), max_size=2),
    cuts=st.lists(st.integers(min_value=0, max_value=1500), max_size=5),
)
def test_both_backends_relay_the_same_answers(
    both_backends: Any,
    answers: list[tuple[int, str]],
    extra: list[bytes],
    held_ids: set[int],
    cuts: list[int],
) -> None:
    frames = [_answer(i, r) for i, r in answers] + extra
    stream = b"".join(f + b"\n" for f in sorted(frames, key=len))
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]

    def run(backend: ModuleType) -> tuple[list[object], list[tuple[int, Any]]]:
        ids = backend.IdMap()
        for n, id in enumerate([1, "a", 2**70, "\u00e9", -3, 0, "q", 5]):
            ids.outbound(n % 3, id)
        for uid in held_ids:
            ids.hold(uid)
        relay = backend.AnswerRelay(ids, max_frame=100)
        results: list[object] = []
        for chunk in [*chunks, None]:
            out, held = relay.close() if chunk is None else relay.feed(chunk)
            results += [out, [_normal(item) for item in held]]
        return results, [ids.pending(conn) for conn in range(3)]

    assert run(both_backends.native) == run(both_backends.python)
