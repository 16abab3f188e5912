"""The payload skip against the oracle: ``params`` and ``result`` values scanned without being built.

The lazy path validates a payload by skipping it (a structural scan), the eager path by building it,
and the Python backend by ``json.loads``: all three must accept and refuse exactly the same bytes. The
values here are written token by token rather than dumped by ``json``, so that they reach what a
serializer never writes: every escape (lone and paired surrogates included), every byte 0x00-0xFF raw
inside strings, numbers of any length and shape, whitespace between tokens, and near misses of each
(then truncated or corrupted). They sit in ``params`` or ``result`` behind the envelope heads seen in
practice (the usual compact ``"jsonrpc":"2.0",`` first, which the native scan reads as one block, and
spaced or reordered ones, which it reads member by member).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ._support import outcome
from .strategies import mutated

fixtures_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=100)

# Escapes: every short one, \u of each class, surrogate pairs; then the invalid ones: pairs
# reversed, lone halves, a half followed by a non-surrogate, short or bad hex, escapes of characters
# that have none, a backslash at the end.
VALID_ESCAPES = [
    b'\\"',
    b"\\\\",
    b"\\/",
    b"\\b",
    b"\\f",
    b"\\n",
    b"\\r",
    b"\\t",
    b"\\u0000",
    b"\\u001f",
    b"\\u0041",
    b"\\u00e9",
    b"\\u20AC",
    b"\\uFFFF",
    b"\\ud83d\\ude00",
    b"\\uD834\\uDD1E",
    b"\\udbff\\udfff",
]
INVALID_ESCAPES = [
    b"\\ud800",
    b"\\udc00",
    b"\\ude00\\ud83d",
    b"\\ud800\\u0041",
    b"\\ud800\\n",
    b"\\ud800x",
    b"\\u12",
    b"\\u12g4",
    b"\\uXYZW",
    b"\\U0041",
    b"\\x41",
    b"\\a",
    b"\\'",
    b"\\0",
    b"\\ ",
    b"\\",
]
ESCAPES = VALID_ESCAPES + INVALID_ESCAPES

# Pieces of a string's content. Valid: escapes, printable text (UTF-8 of any plane), runs of ASCII
# long enough for the block search. Invalid: a bad escape, or any single byte (control bytes, quotes,
# backslashes and bytes above 0x7F included).
VALID_PIECES = (
    st.sampled_from(VALID_ESCAPES)
    | st.sampled_from([b"a" * n for n in (1, 7, 8, 15, 16, 17, 31, 32, 33, 64)])
    | st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters='"\\'), max_size=12).map(
        str.encode
    )
)
INVALID_PIECES = st.sampled_from(INVALID_ESCAPES * 8 + [bytes([b]) for b in range(256)])


@st.composite
def strings(draw: st.DrawFn, bad: bool = False) -> bytes:
    """A valid string token, or (``bad``) one with one invalid piece among valid ones."""
    parts = draw(st.lists(VALID_PIECES, max_size=8))
    if bad:
        parts.insert(draw(st.integers(0, len(parts))), draw(INVALID_PIECES))
    return b'"' + b"".join(parts) + b'"'


# Whitespace between tokens: none (the usual) or JSON's four (no LF: it ends a frame).
SPACE = st.sampled_from([b""] * 12 + [b" ", b"\t", b"\r", b"  \t "])


@st.composite
def numbers(draw: st.DrawFn, bad: bool = False) -> bytes:
    """A number token: integer part of any length, maybe a fraction and an exponent of any length;
    ``bad``: maybe malformed (a plus sign, a leading zero, an empty fraction or exponent)."""
    sign = draw(st.sampled_from([b"", b"-", b"+"] if bad else [b"", b"-"]))
    digits = draw(st.sampled_from([1, 1, 2, 5, 18, 19, 20, 40, 300]))
    first = draw(st.sampled_from(b"0123456789" if bad else b"123456789"))
    rest = bytes(draw(st.lists(st.sampled_from(b"0123456789"), min_size=digits - 1, max_size=digits - 1)))
    out = sign + (b"0" if not bad and draw(st.integers(0, 5)) == 0 else bytes([first]) + rest)
    least = 0 if bad else 1
    if draw(st.integers(0, 3)) == 0:
        out += b"." + b"7" * draw(st.sampled_from([least, 1, 3, 30]))
    if draw(st.integers(0, 3)) == 0:
        out += draw(st.sampled_from([b"e", b"E"])) + draw(st.sampled_from([b"", b"+", b"-"]))
        out += b"3" * draw(st.sampled_from([least, 1, 2, 25]))
    return out


# Tokens that are never valid where a value or whitespace is expected.
BAD_TOKENS = st.sampled_from([b"tru", b"nul", b"fals", b"True", b"nulll", b"NaN", b"\x0c", b"'a'", b""])


@st.composite
def scalars(draw: st.DrawFn) -> bytes:
    """A scalar, valid but in one of forty (a malformed string, number or token), so that a value
    holds at most one error as a rule: the one the two backends must judge alike."""
    if draw(st.integers(0, 39)) == 0:
        return draw(strings(bad=True) | numbers(bad=True) | BAD_TOKENS)
    return draw(strings() | numbers() | st.sampled_from([b"true", b"false", b"null"]))


def _joined(draw: st.DrawFn, parts: list[bytes]) -> bytes:
    """``parts`` joined by commas with whitespace drawn around each."""
    out = b""
    for index, part in enumerate(parts):
        if index:
            out += draw(SPACE) + b"," + draw(SPACE)
        out += part
    return out


@st.composite
def arrays(draw: st.DrawFn, children: st.SearchStrategy[bytes]) -> bytes:
    """An array of ``children``, whitespace drawn inside."""
    items = draw(st.lists(children, max_size=5))
    return b"[" + draw(SPACE) + _joined(draw, items) + draw(SPACE) + b"]"


@st.composite
def objects(draw: st.DrawFn, children: st.SearchStrategy[bytes]) -> bytes:
    """An object of ``children``, whitespace drawn inside."""
    # a key malformed in one of forty, as a scalar is
    keys = st.integers(0, 39).flatmap(lambda n: strings(bad=n == 0))
    members = draw(st.lists(st.tuples(keys, children), max_size=5))
    parts = [key + draw(SPACE) + b":" + draw(SPACE) + value for key, value in members]
    return b"{" + draw(SPACE) + _joined(draw, parts) + draw(SPACE) + b"}"


values = st.recursive(scalars(), lambda children: arrays(children) | objects(children), max_leaves=25)

# Envelope heads with the payload's member last: compact as usual, spaced, reordered, jsonrpc after
# the payload or duplicated, and near misses of the compact first member.
HEADS = [
    (b'{"jsonrpc":"2.0","id":1,"method":"m","params":', b"}"),
    (b'{"jsonrpc":"2.0","method":"notifications/m","params":', b"}"),
    (b'{"jsonrpc":"2.0","id":"r-1","result":', b"}"),
    (b'{"jsonrpc":"2.0","id":2,"result":', b',"params":{}}'),
    (b'{ "jsonrpc" : "2.0" , "id" : 3 , "result" : ', b" }"),
    (b'{"id":4,"jsonrpc":"2.0","result":', b"}"),
    (b'{"method":"m","params":', b',"jsonrpc":"2.0"}'),
    (b'{"jsonrpc":"2.0","jsonrpc":"1.0","id":5,"result":', b"}"),
    (b'{"jsonrpc":"1.0","jsonrpc":"2.0","id":5,"result":', b"}"),
    (b'{"jsonrpc":"2.0" ,"id":6,"result":', b"}"),
    (b'{"jsonrpc":"2.0",,"id":6,"result":', b"}"),
    (b'{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m","data":', b"}}"),
    (b'{"jsonrpc":"2.0","id":8,"method":"m","params":{"k":', b"}}"),
    (b'[{"jsonrpc":"2.0","id":9,"result":', b"}]"),
]


@st.composite
def payload_frames(draw: st.DrawFn) -> bytes:
    """A frame whose payload is a drawn value; a quarter of them corrupted by one byte-level edit."""
    head, tail = draw(st.sampled_from(HEADS))
    frame = head + draw(values) + tail
    if draw(st.integers(0, 3)) == 0:
        frame = draw(mutated(frame))
    return frame


def decoded(backend: Any, data: bytes) -> list[Any]:
    """What every decoding path of ``backend`` makes of ``data`` (one frame, no terminator)."""
    lines = data.replace(b"\n", b" ") + b"\n"
    out = []
    for lazy in (True, False):
        out.append(outcome(partial(backend.decode, lines, lazy=lazy)))
        out.append(outcome(partial(fed_in_halves, backend.Decoder(lazy=lazy), lines)))
    return out


def fed_in_halves(decoder: Any, data: bytes) -> list[Any]:
    """What ``decoder`` returns for ``data`` fed in two chunks, cut in the middle."""
    half = len(data) // 2
    out: list[Any] = decoder.feed(data[:half]) + decoder.feed(data[half:])
    return out


@fixtures_ok
@given(frame=payload_frames())
def test_payload_values_agree(both_backends: Any, frame: bytes) -> None:
    assert decoded(both_backends.native, frame) == decoded(both_backends.python, frame)


@fixtures_ok
@given(value=values)
def test_bare_values_agree(both_backends: Any, value: bytes) -> None:
    # the value as a whole frame (not an object: the scan of a non-envelope frame skips it too)
    assert decoded(both_backends.native, value) == decoded(both_backends.python, value)


def test_every_byte_in_a_string_payload(both_backends: Any) -> None:
    # each byte alone, and after a run long enough to be found by the block search, at each
    # distance from the frame's end (the search reads the last bytes of a frame in smaller steps)
    for byte in range(256):
        for prefix in (b"", b"x" * 15, b"x" * 40):
            for suffix in (b'"}', b'"' + b" " * 20 + b"}", b'","k":1}'):
                body = b'{"jsonrpc":"2.0","id":1,"result":{"s":"' + prefix + bytes([byte]) + suffix + b"}"
                native = decoded(both_backends.native, body)
                assert native == decoded(both_backends.python, body), (byte, prefix, suffix)


def test_every_escape_in_a_string_payload(both_backends: Any) -> None:
    heads = [
        (b'{"jsonrpc":"2.0","id":1,"result":"', b'"}'),
        (b'{"jsonrpc": "2.0","method":"m","params":["', b'"]}'),
    ]
    for escape in ESCAPES:
        for prefix in (b"", b"y" * 16):
            for head, tail in heads:
                body = head + prefix + escape + tail
                assert decoded(both_backends.native, body) == decoded(both_backends.python, body), escape
