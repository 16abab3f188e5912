"""Differential tests: the native and the Python backend give equal results on random input.

Equality is the contract's: every ``Message`` field but ``lazy``, every ``FrameError`` field, the same
exception class and message. Per ``feed()`` call, not only overall, since what a call returns is part
of the contract. Plus chunking invariance on one backend: the chunking never changes the result.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ._support import canon, canon_all, canon_value, is_message, outcome, split_at
from .strategies import (
    decoder_options,
    frames,
    inside_utf8,
    json_values,
    split_points,
    streams,
    valid_ids,
)

# The fixtures return modules (stateless for these tests), so sharing them across examples is safe.
fixtures_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def run_decoder(backend: ModuleType, chunks: list[bytes], options: dict[str, Any]) -> list[Any]:
    """Per feed: (canon of what it returned, offset); then close(), then a feed after close."""
    decoder = backend.Decoder(**options)
    trace: list[Any] = []
    for chunk in chunks:
        trace.append((outcome(lambda chunk=chunk: decoder.feed(chunk)), decoder.offset))
    trace.append(outcome(decoder.close))
    trace.append(outcome(lambda: decoder.feed(b"x")))
    return trace


def items_of(backend: ModuleType, data: bytes, options: dict[str, Any]) -> list[Any]:
    decoder = backend.Decoder(**options)
    return [*decoder.feed(data), *decoder.close()]


@fixtures_ok
@given(data=st.data(), stream=streams(), options=decoder_options)
def test_decoders_agree(
    both_backends: Any, data: st.DataObject, stream: bytes, options: dict[str, Any]
) -> None:
    chunks = split_at(stream, data.draw(split_points(stream)))
    assert run_decoder(both_backends.native, chunks, options) == run_decoder(
        both_backends.python, chunks, options
    )


@fixtures_ok
@given(stream=streams(max_frames=2), options=decoder_options)
def test_decoders_agree_split_inside_utf8(both_backends: Any, stream: bytes, options: dict[str, Any]) -> None:
    for point in inside_utf8(stream):
        chunks = split_at(stream, [point])
        native = run_decoder(both_backends.native, chunks, options)
        assert native == run_decoder(both_backends.python, chunks, options), f"split at {point}"


@fixtures_ok
@given(body=frames() | streams(max_frames=2), lazy=st.booleans(), batches=st.booleans())
def test_one_shot_decode_agrees(both_backends: Any, body: bytes, lazy: bool, batches: bool) -> None:
    def run(backend: ModuleType) -> Any:
        return outcome(lambda: backend.decode(body, lazy=lazy, batches=batches))

    assert run(both_backends.native) == run(both_backends.python)


@fixtures_ok
@given(body=frames(), new_id=valid_ids)
def test_splice_and_with_id_agree(both_backends: Any, body: bytes, new_id: Any) -> None:
    def run(backend: ModuleType) -> list[Any]:
        results = [outcome(lambda: backend.splice_id(body, new_id))]
        for item in backend.decode(body):
            if is_message(item):
                results.append(outcome(lambda item=item: item.with_id(new_id)))
        return results

    assert run(both_backends.native) == run(both_backends.python)


@fixtures_ok
@given(stream=streams(max_frames=3))
def test_frame_error_responses_agree(both_backends: Any, stream: bytes) -> None:
    def run(backend: ModuleType) -> list[Any]:
        return [(canon(i), i.to_response()) for i in items_of(backend, stream, {}) if not is_message(i)]

    assert run(both_backends.native) == run(both_backends.python)


# ---- encoders -------------------------------------------------------------------------------------

DEEP: list[Any] = []
for _ in range(300):
    DEEP = [DEEP]
unencodable = st.sampled_from([{1, 2}, b"x", object, {1: 2}, {"k": "\ud800"}, "\udfff", DEEP, (1, "t")])
encodable_or_not = st.recursive(
    json_values | unencodable,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


def has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list | tuple):
        return any(has_float(v) for v in value)
    if isinstance(value, dict):
        return any(has_float(v) for v in value.values())
    return False


def encoded(call: Any, value: Any) -> Any:
    """The outcome of an encoder call; float text may differ, so such output is compared decoded."""
    result = outcome(call)
    if result[0] == "returned" and has_float(value):
        return ("returned", [canon_value(json.loads(line)) for line in result[1].splitlines()])
    return result


@fixtures_ok
@given(value=encodable_or_not, rid=valid_ids, method=st.text(max_size=5))
def test_encoders_agree(both_backends: Any, value: Any, rid: Any, method: Any) -> None:
    def run(b: ModuleType) -> list[Any]:
        return [
            encoded(lambda: b.encode(value), value),
            encoded(lambda: b.encode_many([value, {"v": value}]), value),
            encoded(lambda: b.encode_request(rid, method, value), value),
            encoded(lambda: b.encode_notification(method, value), value),
            encoded(lambda: b.encode_result(rid, value), value),
            encoded(lambda: b.encode_error(rid, 1, "m", value), value),
        ]

    assert run(both_backends.native) == run(both_backends.python)


# ---- correlation ----------------------------------------------------------------------------------

correlator_ops = st.lists(
    st.tuples(
        st.sampled_from(
            ["register", "allocate", "resolve", "pop", "get", "contains", "next_id", "drain", "len"]
        ),
        st.integers(0, 6) | st.sampled_from(["0", "1", "a"]),
    ),
    max_size=30,
)


def apply_correlator(backend: ModuleType, ops: list[tuple[str, Any]], limit: int) -> list[Any]:
    correlator = backend.Correlator(max_pending=limit)
    calls = {
        "register": lambda key: correlator.register(key, f"w{key!r}"),
        "allocate": lambda key: correlator.allocate(f"a{key!r}"),
        "resolve": correlator.resolve,
        "pop": lambda key: correlator.pop(key, "default"),
        "get": lambda key: correlator.get(key, "default"),
        "contains": lambda key: key in correlator,
        "next_id": lambda key: correlator.next_id(),
        "drain": lambda key: correlator.drain(),
        "len": lambda key: len(correlator),
    }
    return [outcome(lambda op=op, key=key: calls[op](key)) for op, key in ops]


@fixtures_ok
@given(ops=correlator_ops, limit=st.integers(1, 5))
def test_correlators_agree(both_backends: Any, ops: list[tuple[str, Any]], limit: int) -> None:
    assert apply_correlator(both_backends.native, ops, limit) == apply_correlator(
        both_backends.python, ops, limit
    )


idmap_ops = st.lists(
    st.tuples(
        st.sampled_from(["outbound", "inbound", "discard", "upstream", "drop", "len"]),
        st.integers(0, 2),
        st.integers(0, 5) | st.sampled_from(["1", "x"]),
    ),
    max_size=30,
)


def apply_idmap(backend: ModuleType, ops: list[tuple[str, int, Any]], limit: int) -> list[Any]:
    idmap = backend.IdMap(max_pending=limit)
    calls = {
        "outbound": idmap.outbound,
        "inbound": lambda conn, key: idmap.inbound(key),
        "discard": lambda conn, key: idmap.discard(key),
        "upstream": idmap.upstream,
        "drop": lambda conn, key: sorted(idmap.drop_connection(conn)),
        "len": lambda conn, key: len(idmap),
    }
    return [outcome(lambda op=op, conn=conn, key=key: calls[op](conn, key)) for op, conn, key in ops]


@fixtures_ok
@given(ops=idmap_ops, limit=st.integers(1, 5))
def test_idmaps_agree(both_backends: Any, ops: list[tuple[str, int, Any]], limit: int) -> None:
    assert apply_idmap(both_backends.native, ops, limit) == apply_idmap(both_backends.python, ops, limit)


# ---- chunking invariance on one backend -----------------------------------------------------------


@fixtures_ok
@given(data=st.data(), stream=streams(), options=decoder_options)
def test_chunking_invariance(
    backend: ModuleType, data: st.DataObject, stream: bytes, options: dict[str, Any]
) -> None:
    whole = canon_all(items_of(backend, stream, options))
    decoder = backend.Decoder(**options)
    got: list[Any] = []
    for chunk in split_at(stream, data.draw(split_points(stream))):
        got.extend(decoder.feed(chunk))
        assert decoder.buffered <= decoder.max_frame + 1
    got.extend(decoder.close())
    assert canon_all(got) == whole


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stream=streams(max_frames=3), options=decoder_options)
def test_every_split_point(backend: ModuleType, stream: bytes, options: dict[str, Any]) -> None:
    whole = canon_all(items_of(backend, stream, options))
    for point in range(len(stream) + 1):
        decoder = backend.Decoder(**options)
        got = [*decoder.feed(stream[:point]), *decoder.feed(stream[point:]), *decoder.close()]
        assert canon_all(got) == whole, f"split at {point}"
    decoder = backend.Decoder(**options)
    got = [item for i in range(len(stream)) for item in decoder.feed(stream[i : i + 1])]
    assert canon_all([*got, *decoder.close()]) == whole, "byte by byte"
