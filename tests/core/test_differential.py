"""Differential tests: the native and the Python backend give equal results on random input.

Equality is the contract's: every ``Message`` field but ``lazy``, every ``FrameError`` field, the same
exception class and message. Per ``feed()`` call, not only overall, since what a call returns is part
of the contract. Plus chunking invariance on one backend (the chunking never changes the result),
``feed`` against the one-shot ``decode``, and the contract's rules for hostile input (issue 17) stated
as properties over the strategies' whole space: integer literals of any length, blank bodies, invalid
notifications, ``FrameError.raw``, encoder round trips, ids of any size in ``Correlator``/``IdMap``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpframe.errors import DuplicateIdError, EncodeError, UnknownIdError

from ._support import canon, canon_all, canon_value, is_message, outcome, split_at
from .strategies import (
    BOM,
    MAX_INT_DIGITS,
    IntLiteral,
    correlation_keys,
    decoder_options,
    first_ids,
    floats,
    frames,
    inside_utf8,
    int_literals,
    integers,
    json_values,
    longest_int,
    materialize,
    names,
    serialized,
    split_points,
    streams,
    text,
    valid_ids,
    wire_ids,
)

# The fixtures return modules (stateless for these tests), so sharing them across examples is safe.
fixtures_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])

LONG_INT = f"Invalid Request: integer literal longer than {MAX_INT_DIGITS} digits"


@contextmanager
def int_digits_limit(limit: int) -> Iterator[None]:
    """Run with ``sys.set_int_max_str_digits(limit)`` (the contract must not depend on it)."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def run_decoder(backend: ModuleType, chunks: list[bytes], options: dict[str, Any]) -> list[Any]:
    """Per feed: (canon of what it returned, offset); then close(), then a feed after close."""
    decoder = backend.Decoder(**options)
    trace: list[Any] = []
    for chunk in chunks:
        trace.append((outcome(partial(decoder.feed, chunk)), decoder.offset))
    trace.append(outcome(decoder.close))
    trace.append(outcome(lambda: decoder.feed(b"x")))
    return trace


def items_of(backend: ModuleType, data: bytes, options: dict[str, Any]) -> list[Any]:
    decoder = backend.Decoder(**options)
    return [*decoder.feed(data), *decoder.close()]


def raw_of(item: Any) -> Any:
    """``FrameError.raw`` where it exists (compared between backends once both have it)."""
    return getattr(item, "raw", "<none>")


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
@given(stream=streams(max_frames=2, small=True), options=decoder_options)
def test_decoders_agree_split_inside_utf8(both_backends: Any, stream: bytes, options: dict[str, Any]) -> None:
    for point in inside_utf8(stream):
        chunks = split_at(stream, [point])
        native = run_decoder(both_backends.native, chunks, options)
        assert native == run_decoder(both_backends.python, chunks, options), f"split at {point}"


# Found by the `structured` fuzz target: a batch element that is a bare over-long integer.
LONG_ELEMENT = b"[" + b"1" * (MAX_INT_DIGITS + 1) + b", 2]"


@fixtures_ok
@given(body=frames() | streams(max_frames=2), lazy=st.booleans(), batches=st.booleans())
@example(body=LONG_ELEMENT, lazy=False, batches=True)
def test_one_shot_decode_agrees(both_backends: Any, body: bytes, lazy: bool, batches: bool) -> None:
    def run(backend: ModuleType) -> Any:
        def errors_raw() -> list[Any]:
            return [raw_of(i) for i in backend.decode(body, lazy=lazy, batches=batches) if not is_message(i)]

        return outcome(lambda: backend.decode(body, lazy=lazy, batches=batches)), outcome(errors_raw)

    assert run(both_backends.native) == run(both_backends.python)


@fixtures_ok
@given(body=frames(), options=decoder_options, data=st.data())
def test_feed_matches_one_shot_decode(
    backend: ModuleType, body: bytes, options: dict[str, Any], data: st.DataObject
) -> None:
    """A body with no LF is one frame either way: ``decode`` and ``feed`` (any chunking) agree."""
    body = body.replace(b"\n", b" ").rstrip(b"\r")
    if not body.removeprefix(BOM).strip(b" \t\r"):
        body = b"{}"  # blank (a leading BOM aside): decode reports it, feed skips it (see the test below)
    chunks = split_at(body, data.draw(split_points(body)))
    decoder = backend.Decoder(**options)
    fed = [item for chunk in chunks for item in decoder.feed(chunk)] + decoder.close()
    assert canon_all(fed) == canon_all(backend.decode(body, **options))


@fixtures_ok
@given(body=frames(), new_id=wire_ids)
def test_splice_and_with_id_agree(both_backends: Any, body: bytes, new_id: Any) -> None:
    new_id = materialize(new_id)

    def run(backend: ModuleType) -> list[Any]:
        results = [outcome(lambda: backend.splice_id(body, new_id))]
        for item in backend.decode(body):
            if is_message(item):
                results.append(outcome(partial(item.with_id, new_id)))
        return results

    assert run(both_backends.native) == run(both_backends.python)


@fixtures_ok
@given(stream=streams(max_frames=3))
def test_frame_error_responses_agree(both_backends: Any, stream: bytes) -> None:
    def run(backend: ModuleType) -> list[Any]:
        errors = [i for i in items_of(backend, stream, {}) if not is_message(i)]
        return [(canon(i), raw_of(i), i.to_response()) for i in errors]

    assert run(both_backends.native) == run(both_backends.python)


# ---- hostile input: the contract's rules as properties --------------------------------------------

KINDS = ["request", "notification", "result", "error"]


@st.composite
def valid_envelopes(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    """A valid message of ``kind`` with no integer past the digit limit."""
    env: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind in ("request", "notification"):
        env["method"] = draw(names)
        env["params"] = draw(
            st.lists(json_values, max_size=2) | st.dictionaries(text, json_values, max_size=2)
        )
    if kind != "notification":
        env["id"] = draw(valid_ids)
    if kind == "result":
        env["result"] = draw(json_values)
    if kind == "error":
        env["error"] = {"code": draw(integers), "message": draw(text), "data": draw(json_values)}
    return env


def inject(env: dict[str, Any], literal: IntLiteral, where: str) -> None:
    """Put ``literal`` into ``env`` at ``where`` (a member that ``env``'s kind has)."""
    if where == "id":
        env["id"] = literal
    elif where == "params":
        env["params"] = [{"deep": [1, literal]}]
    elif where == "result":
        env["result"] = {"n": literal}
    else:
        env["error"]["data" if where == "data" else "code"] = literal


PLACES = {"request": ["id", "params"], "notification": ["params"], "result": ["id", "result"]}


@fixtures_ok
@given(data=st.data(), kind=st.sampled_from(KINDS), literal=int_literals(), lazy=st.booleans())
def test_long_integer_literals(
    backend: ModuleType, data: st.DataObject, kind: str, literal: IntLiteral, lazy: bool
) -> None:
    """Past ``MAX_INT_DIGITS`` digits anywhere, a frame is a -32600 ``FrameError`` with its id when
    readable, the frames around it intact; up to it, the integer decodes exactly under any
    ``sys.set_int_max_str_digits``."""
    env = data.draw(valid_envelopes(kind))
    where = data.draw(st.sampled_from(PLACES.get(kind, ["id", "data", "code"])))
    inject(env, literal, where)
    frame = data.draw(serialized(env))
    ping = b'{"jsonrpc":"2.0","id":0,"method":"ping"}'
    with int_digits_limit(640):  # lazy values are built in here too, by canon()
        items = backend.Decoder(lazy=lazy).feed(ping + b"\n" + frame + b"\n" + ping + b"\n")
        views = canon_all(items)
    too_long = literal.digits > MAX_INT_DIGITS
    assert [v[0] for v in views] == ["Message", "FrameError" if too_long else "Message", "Message"]
    if too_long:
        error = items[1]
        readable = None if where == "id" else env.get("id")
        assert (error.code, error.message, error.id) == (-32600, LONG_INT, readable)
        assert error.notification == (kind == "notification")
        return
    want = materialize(env)
    payload = {"request": 4, "notification": 4, "result": 5, "error": 6}[kind]
    member = {4: "params", 5: "result", 6: "error"}[payload]
    assert (views[1][1], views[1][2]) == (kind, canon_value(want.get("id")))
    assert views[1][payload] == canon_value(want[member])


@fixtures_ok
@given(body=st.text(alphabet=" \t\r\n", max_size=6).map(str.encode), options=decoder_options)
def test_blank_bodies_are_parse_errors(backend: ModuleType, body: bytes, options: dict[str, Any]) -> None:
    """A blank body is a -32700 for ``decode`` (an HTTP POST); blank lines in a stream are skipped.
    (A blank body longer than ``max_frame`` is oversize first, as a blank line is: not drawn here.)"""
    options["max_frame"] = max(options.get("max_frame", 6), 6)
    (error,) = backend.decode(body, **options)
    assert (error.code, error.message, error.id, error.offset) == (-32700, "Parse error: empty body", None, 0)
    assert not error.notification
    assert items_of(backend, body, options) == []


@pytest.mark.parametrize("blank", [b"", b" ", b"\t\r "])
def test_a_bom_then_blank_is_an_empty_body_and_a_skipped_line(backend: ModuleType, blank: bytes) -> None:
    """A BOM is not content: after it the body is blank (-32700 at offset 3); fed, nothing comes out."""
    (error,) = backend.decode(BOM + blank)
    assert (error.code, error.message, error.offset) == (-32700, "Parse error: empty body", 3)
    assert items_of(backend, BOM + blank, {}) == []


@fixtures_ok
@given(env=st.sampled_from([{"jsonrpc": "2.0"}, {}, {"jsonrpc": "1.0"}, {"jsonrpc": 2}]), data=st.data())
def test_invalid_notifications_are_answered(
    backend: ModuleType, env: dict[str, Any], data: st.DataObject
) -> None:
    """An object with ``method`` and no ``id`` that fails the envelope checks is an Invalid Request
    (``notification=False``, so it is answered); a valid one is a notification."""
    env = {**env, "method": data.draw(names | json_values)}
    if data.draw(st.booleans()):
        env["params"] = data.draw(json_values)
    if data.draw(st.integers(0, 3)) == 0:
        env[data.draw(st.sampled_from(["result", "error", "jsonrpc"]))] = data.draw(json_values)
    body = data.draw(serialized(env))
    for item in [*backend.decode(body), *backend.decode(b"[" + body + b"]")]:
        if is_message(item):
            assert item.kind == "notification"
        else:
            assert (item.code, item.notification, item.id) == (-32600, False, None), item.message


@fixtures_ok
@given(body=frames(), batches=st.booleans())
def test_frame_error_raw_is_the_frame(backend: ModuleType, body: bytes, batches: bool) -> None:
    """``FrameError.raw`` holds the rejected frame's (or batch element's) exact bytes."""
    if not body.removeprefix(BOM).strip(b" \t\r\n"):
        body = b"x"  # blank bodies: see test_blank_bodies_are_parse_errors
    for item in backend.decode(body, batches=batches):
        if is_message(item):
            continue
        raw = item.raw
        if item.batch is None:
            assert raw == body.removeprefix(BOM), item
        else:
            assert body[item.offset : item.offset + len(raw)] == raw, item
            assert raw.startswith(item.preview), item


# ---- encoders -------------------------------------------------------------------------------------

DEEP: list[Any] = []
for _ in range(300):
    DEEP = [DEEP]
unencodable = st.sampled_from([{1, 2}, b"x", object, {1: 2}, {"k": "\ud800"}, "\udfff", DEEP, (1, "t")])
encodable_or_not = st.recursive(
    json_values | unencodable | int_literals(),
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
    """The outcome of an encoder call; float text may differ, so such output is compared decoded.
    A ``TypeError``'s message is the contract's only up to its first word (the argument's name)."""
    result = outcome(call)
    if result[0] == "returned" and has_float(value):
        with int_digits_limit(0):  # what was written is compared, whatever its integers' length
            lines = [canon_value(json.loads(line)) for line in result[1].splitlines()]
        return ("returned", lines)
    if result[0] == "raised" and result[1] is TypeError:
        return (*result[:2], result[2].split(" ")[0])
    return result


@fixtures_ok
@given(value=encodable_or_not, rid=wire_ids, method=st.text(max_size=5))
def test_encoders_agree(both_backends: Any, value: Any, rid: Any, method: Any) -> None:
    value, rid = materialize(value), materialize(rid)

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


bad_ids = wire_ids | st.sampled_from([True, 1.5, None, [1], "\ud800", b"1"])
bad_strings = st.text(max_size=3) | st.sampled_from([5, None, "\udfff", b"m", True])
bad_codes = integers | int_literals() | st.sampled_from([True, 1.5, "1", None])


@fixtures_ok
@given(args=st.tuples(bad_ids, bad_strings, bad_codes, bad_strings), value=encodable_or_not)
def test_encoder_argument_order_agrees(both_backends: Any, args: tuple[Any, ...], value: Any) -> None:
    """With several bad arguments both backends raise for the leftmost one, the same way."""
    rid, method, code, message = materialize(args)
    value = materialize(value)

    def run(b: ModuleType) -> list[Any]:
        return [
            encoded(lambda: b.encode_request(rid, method, value), value),
            encoded(lambda: b.encode_notification(method, value), value),
            encoded(lambda: b.encode_result(rid, value), value),
            encoded(lambda: b.encode_error(rid, code, message, value), value),
        ]

    assert run(both_backends.native) == run(both_backends.python)


round_trip_values = st.recursive(
    st.none() | st.booleans() | integers | int_literals() | floats | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)


@fixtures_ok
@given(value=round_trip_values, rid=wire_ids)
def test_encode_round_trips(backend: ModuleType, value: Any, rid: Any) -> None:
    """What an encoder writes decodes to the same values, integers exact up to the digit limit
    whatever ``sys.set_int_max_str_digits`` says; past it, ``EncodeError``."""
    too_long = max(longest_int(value), longest_int(rid)) > MAX_INT_DIGITS
    value, rid = materialize(value), materialize(rid)
    with int_digits_limit(640):
        result = outcome(lambda: backend.decode(backend.encode_result(rid, value)))
    if too_long:
        assert result == ("raised", EncodeError, f"Integer exceeds the limit of {MAX_INT_DIGITS} digits")
        return
    assert result[0] == "returned", result
    (view,) = result[1]
    assert (view[1], view[2], view[5]) == ("result", canon_value(rid), canon_value(value))


# ---- correlation ----------------------------------------------------------------------------------

correlator_ops = st.lists(
    st.tuples(
        st.sampled_from(
            ["register", "allocate", "resolve", "pop", "get", "contains", "next_id", "drain", "len"]
        ),
        correlation_keys,
    ),
    max_size=30,
)


def apply_correlator(backend: ModuleType, ops: list[tuple[str, Any]], limit: int, first_id: Any) -> list[Any]:
    made = outcome(lambda: backend.Correlator(max_pending=limit, first_id=first_id))
    if made[0] == "raised":
        return [made]
    correlator = made[1]
    calls = {
        "register": lambda key: correlator.register(key, "w"),
        "allocate": lambda key: correlator.allocate("a"),
        "resolve": correlator.resolve,
        "pop": lambda key: correlator.pop(key, "default"),
        "get": lambda key: correlator.get(key, "default"),
        "contains": lambda key: key in correlator,
        "next_id": lambda key: correlator.next_id(),
        "drain": lambda key: correlator.drain(),
        "len": lambda key: len(correlator),
    }
    return [outcome(partial(calls[op], materialize(key))) for op, key in ops]


@fixtures_ok
@given(ops=correlator_ops, limit=st.integers(1, 5), first_id=first_ids)
def test_correlators_agree(both_backends: Any, ops: list[tuple[str, Any]], limit: int, first_id: Any) -> None:
    assert apply_correlator(both_backends.native, ops, limit, first_id) == apply_correlator(
        both_backends.python, ops, limit, first_id
    )


idmap_ops = st.lists(
    st.tuples(
        st.sampled_from(["outbound", "inbound", "discard", "upstream", "drop", "len"]),
        st.integers(0, 2),
        correlation_keys,
    ),
    max_size=30,
)


def apply_idmap(backend: ModuleType, ops: list[tuple[str, int, Any]], limit: int, first_id: Any) -> list[Any]:
    made = outcome(lambda: backend.IdMap(max_pending=limit, first_id=first_id))
    if made[0] == "raised":
        return [made]
    idmap = made[1]
    calls = {
        "outbound": idmap.outbound,
        "inbound": lambda conn, key: idmap.inbound(key),
        "discard": lambda conn, key: idmap.discard(key),
        "upstream": idmap.upstream,
        "drop": lambda conn, key: sorted(idmap.drop_connection(conn)),
        "len": lambda conn, key: len(idmap),
    }
    return [outcome(partial(calls[op], conn, materialize(key))) for op, conn, key in ops]


@fixtures_ok
@given(ops=idmap_ops, limit=st.integers(1, 5), first_id=first_ids)
def test_idmaps_agree(both_backends: Any, ops: list[tuple[str, int, Any]], limit: int, first_id: Any) -> None:
    assert apply_idmap(both_backends.native, ops, limit, first_id) == apply_idmap(
        both_backends.python, ops, limit, first_id
    )


@fixtures_ok
@given(key=correlation_keys)
def test_correlation_errors_keep_their_class(backend: ModuleType, key: Any) -> None:
    """An id of any size gets the contract's exceptions (a session catches these classes)."""
    key = materialize(key)
    correlator, idmap = backend.Correlator(), backend.IdMap()
    correlator.register(key, "w")
    idmap.outbound(1, key)
    other = key + 1 if isinstance(key, int) else key + "x"
    for call, error in [
        (lambda: correlator.register(key, "w"), DuplicateIdError),
        (lambda: correlator.resolve(other), UnknownIdError),
        (lambda: idmap.outbound(1, key), DuplicateIdError),
    ]:
        assert outcome(call)[:2] == ("raised", error)
    assert correlator.resolve(key) == "w"


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
@given(stream=streams(max_frames=3, small=True), options=decoder_options)
def test_every_split_point(backend: ModuleType, stream: bytes, options: dict[str, Any]) -> None:
    whole = canon_all(items_of(backend, stream, options))
    for point in range(len(stream) + 1):
        decoder = backend.Decoder(**options)
        got = [*decoder.feed(stream[:point]), *decoder.feed(stream[point:]), *decoder.close()]
        assert canon_all(got) == whole, f"split at {point}"
    decoder = backend.Decoder(**options)
    got = [item for i in range(len(stream)) for item in decoder.feed(stream[i : i + 1])]
    assert canon_all([*got, *decoder.close()]) == whole, "byte by byte"
