"""Hypothesis strategies for the core tests: JSON-RPC-ish envelopes, byte streams and chunkings.

Envelopes are mostly valid with a fair share of wrong members, then serialized with varied whitespace
and escaping, and sometimes mutated at the byte level (truncation, stray bytes of any value, invalid
UTF-8, terminators in the middle). Streams join frames with LF, CRLF or a content CR before LF.

The space is meant to hold what a hostile peer sends, not only what a polite one does: integer
literals of any length (1 to 10,000 digits, both signs, with 4,300 and 4,301 drawn often), ids near
2**53, 2**63 and 2**64, lone surrogates, every byte value, nesting around the depth limit, batches,
arbitrary bytes. Integer literals are drawn as text (``IntLiteral``) so that drawing, printing and
serializing them never meets ``sys.int_max_str_digits``; ``materialize`` turns them into ``int``.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

BOM = b"\xef\xbb\xbf"

# The contract's MAX_INT_DIGITS, written out so the strategies do not depend on either backend.
MAX_INT_DIGITS = 4300

# Text that stresses escaping and UTF-8: ASCII, controls, quotes, 2/3/4-byte characters.
ALPHABET = st.sampled_from(
    [*'ab "\\/\n\r\t\x00\x1f\x7f', "\u00e9", "\u2028", "\u20ac", "\ufeff", "\U0001f600"]
)
text = st.text(alphabet=ALPHABET, max_size=8)
# On the wire only: lone surrogates become invalid UTF-8 (raw) or an invalid `\ud800` escape (ASCII).
wire_text = text | st.text(alphabet=ALPHABET | st.sampled_from(["\ud800", "\udfff"]), max_size=4)
names = st.sampled_from(["tools/call", "ping", "notifications/progress", "", "m\u00e9", "a\nb"]) | text


class IntLiteral:
    """A JSON integer literal, kept as its text (sign included). Not a dataclass: hypothesis would
    print every field of a failing example's dataclass, 10,000 digits included; this repr is short."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IntLiteral) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    @property
    def digits(self) -> int:
        """How many digits it has (the sign not counted)."""
        return len(self.text) - self.text.startswith("-")

    def value(self) -> int:
        """The exact ``int``, built 18 digits at a time (no ``str`` -> ``int`` conversion limit)."""
        body = self.text.lstrip("-")
        number = 0
        for at in range(0, len(body), 18):
            chunk = body[at : at + 18]
            number = number * 10 ** len(chunk) + int(chunk)
        return -number if self.text.startswith("-") else number

    def __repr__(self) -> str:
        if self.digits <= 24:
            return f"IntLiteral({self.text!r})"
        return f"IntLiteral({self.text[:10]!r}... {self.digits} digits)"


DIGIT_COUNTS = (
    st.sampled_from([1, 18, 19, 20, 39, 4299, MAX_INT_DIGITS, MAX_INT_DIGITS + 1, 4302, 10_000])
    | st.integers(1, 40)
    | st.integers(1, 10_000)
)


@st.composite
def int_literals(draw: st.DrawFn) -> IntLiteral:
    """An integer literal of 1 to 10,000 digits, either sign; its digits repeat a short drawn pattern."""
    count = draw(DIGIT_COUNTS)
    sign = draw(st.sampled_from(["", "-"]))
    lead = draw(st.sampled_from("123456789" if count > 1 else "0123456789"))
    pattern = draw(st.text(alphabet="0123456789", min_size=1, max_size=6))
    rest = (pattern * ((count - 1) // len(pattern) + 1))[: count - 1]
    return IntLiteral(sign + lead + rest)


_PAST_LIMIT = 10**MAX_INT_DIGITS  # the least int with more than MAX_INT_DIGITS digits

# Ids where 53-bit (JavaScript), 64-bit signed and unsigned integers end.
NEAR_LIMITS = [
    sign * (2**bits + delta) for bits in (53, 63, 64) for delta in range(-2, 3) for sign in (1, -1)
]
integers = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from([0, -1, *NEAR_LIMITS])
wire_integers = integers | int_literals()
floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
scalars = st.none() | st.booleans() | integers | floats | text


def values_of(leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """JSON values (lists and objects, a few levels deep) over ``leaves``."""
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=12,
    )


json_values = values_of(scalars, text)
"""Values every encoder accepts (no ``IntLiteral``): the encoders' and round trips' space."""
wire_values = values_of(st.none() | st.booleans() | wire_integers | floats | wire_text, wire_text)
"""Values as a hostile peer writes them: ``IntLiteral`` of any length, lone surrogates."""

valid_ids = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from(NEAR_LIMITS) | text
wire_ids = valid_ids | int_literals()


def error_objects(values: st.SearchStrategy[Any], codes: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``error`` members: usually an object with a code and a message, sometimes any value."""
    return st.fixed_dictionaries({"code": codes, "message": text}, optional={"data": values}) | values


def materialize(value: Any) -> Any:
    """``value`` with every ``IntLiteral`` turned into its exact ``int`` (for the encoders)."""
    if isinstance(value, IntLiteral):
        return value.value()
    if isinstance(value, list):
        return [materialize(v) for v in value]
    if isinstance(value, tuple):
        return tuple(materialize(v) for v in value)
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    return value


def longest_int(value: Any) -> int:
    """The most digits of any integer in ``value`` (``IntLiteral`` or ``int``; 0 when there is none)."""
    if isinstance(value, IntLiteral):
        return value.digits
    if isinstance(value, int) and not isinstance(value, bool):
        return len(str(abs(value))) if abs(value) < _PAST_LIMIT else MAX_INT_DIGITS + 1
    if isinstance(value, list | tuple):
        return max((longest_int(v) for v in value), default=0)
    if isinstance(value, dict):
        return max((longest_int(v) for v in value.values()), default=0)
    return 0


@st.composite
def envelopes(draw: st.DrawFn, hostile: bool = True) -> dict[str, Any]:
    """A JSON-RPC-ish object: usually a valid request, notification or response, often not.
    ``hostile``: with long integer literals and lone surrogates; else only values encoders accept."""
    values, ids, keys = (wire_values, wire_ids, wire_text) if hostile else (json_values, valid_ids, text)
    shape = draw(st.sampled_from(["request", "notification", "result", "error", "junk"]))
    env: dict[str, Any] = {}
    if draw(st.integers(0, 9)) > 0:
        env["jsonrpc"] = draw(st.just("2.0") | st.sampled_from(["1.0", "2.0 ", 2.0, None]))
    if shape in ("request", "notification", "junk"):
        env["method"] = draw(names if draw(st.integers(0, 9)) > 0 else values)
        if draw(st.booleans()):
            params = st.dictionaries(keys, values, max_size=3) | st.lists(values, max_size=3)
            env["params"] = draw(params if draw(st.integers(0, 9)) > 0 else values)
    if shape in ("request", "result", "error") or (shape == "junk" and draw(st.booleans())):
        bad_ids: st.SearchStrategy[Any] = (
            ids | st.none() | st.booleans() | floats | st.lists(st.integers(), max_size=2) | st.just({})
        )
        env["id"] = draw(ids if draw(st.integers(0, 5)) > 0 else bad_ids)
    if shape == "result" or (shape == "junk" and draw(st.booleans())):
        env["result"] = draw(values)
    if shape == "error" or (shape == "junk" and draw(st.booleans())):
        env["error"] = draw(error_objects(values, wire_integers if hostile else integers))
    if draw(st.integers(0, 7)) == 0:
        env[draw(keys)] = draw(values)
    order = draw(st.permutations(list(env)))
    return {k: env[k] for k in order}


def dump(value: Any, separators: tuple[str, str], ascii_only: bool) -> str:
    """``value`` as JSON text; an ``IntLiteral`` is written as its text."""
    if isinstance(value, IntLiteral):
        return value.text
    item, key = separators
    if isinstance(value, dict):
        members = (
            json.dumps(k, ensure_ascii=ascii_only) + key + dump(v, separators, ascii_only)
            for k, v in value.items()
        )
        return "{" + item.join(members) + "}"
    if isinstance(value, list):
        return "[" + item.join(dump(v, separators, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only, allow_nan=False)


@st.composite
def serialized(draw: st.DrawFn, value: Any) -> bytes:
    """``value`` as JSON text: compact or spaced, ASCII-escaped or raw UTF-8, never with a raw LF."""
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " : ")]))
    ascii_only = draw(st.booleans())
    return dump(value, separators, ascii_only).encode("utf-8", "surrogatepass")


ENVELOPE_HEAD = b'{"jsonrpc":"2.0","id":1,"method":"m","params":'
# One nesting level each: an opener and its closer.
LEVELS = [(b"[", b"]"), (b'{"k":', b"}"), (b"[0,", b"]"), (b'{"a":1,"b":', b"}")]


@st.composite
def deep_frames(draw: st.DrawFn) -> bytes:
    """A request whose params nest around ``MAX_DEPTH`` (the frame's depth is 1 + ``depth``), the
    innermost value maybe a string of brackets and escaped quotes that the depth scan must skip."""
    depth = draw(st.sampled_from([126, 127, 128, 129, 200]) | st.integers(1, 300))
    cycle = draw(st.lists(st.sampled_from(LEVELS), min_size=1, max_size=3))
    levels = [cycle[i % len(cycle)] for i in range(depth)]
    inner = draw(st.sampled_from([b"0", b'"[[{\\"\\\\"', b'"]]}}"', b"{}"]))
    opened = b"".join(o for o, _ in levels)
    closed = b"".join(c for _, c in reversed(levels))
    return ENVELOPE_HEAD + opened + inner + closed + b"}"


# Frames from JSON-RPC 2.0's own examples and MCP traffic, valid and hostile.
KNOWN_FRAMES = st.sampled_from(
    [
        b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}',
        b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]',
        b"[]",
        b"[1]",
        b"[1,2,3]",
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}',
        b'{"\\u006asonrpc":"2.0","\\u0069d":1,"result":{}}',
        b'{"jsonrpc":"2.0","id":1,"id":"b","method":"m"}',
        b'{"jsonrpc":"2.0","id":1,"result":1e400}',
        b'{"jsonrpc":"2.0","id":-0,"result":-0}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":"m"}}',
        b"",
        b" \t\r",
    ]
)


@st.composite
def frames(draw: st.DrawFn, small: bool = False) -> bytes:
    """One frame's bytes (no terminator): an envelope, a batch, a scalar, a deep or known frame,
    arbitrary bytes, or a mutated one of these. ``small``: no long literals or deep nesting (for
    tests that decode a stream once per byte)."""
    values = json_values if small else wire_values
    kind = draw(st.integers(0, 12))
    if kind <= 5:
        body = draw(serialized(draw(envelopes(not small))))
    elif kind <= 7:
        body = draw(serialized(draw(st.lists(envelopes(not small) | values, max_size=4))))
    elif kind == 8:
        body = draw(serialized(draw(values)))
    elif kind == 9 and not small:
        body = draw(deep_frames())
    elif kind == 10:
        body = draw(KNOWN_FRAMES)
    else:
        body = draw(st.binary(max_size=24))
    if draw(st.integers(0, 3)) == 0:
        body = draw(mutated(body))
    return body


# Invalid UTF-8 of every kind: stray continuation, overlong forms, surrogates, past U+10FFFF, cut short.
INVALID_UTF8 = [b"\xff", b"\xc3", b"\x80", b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]
MUTATION_BYTES = st.sampled_from(
    [
        *INVALID_UTF8,
        b"\xe2\x82",
        b"\xf0\x9f\x98",
        b'"',
        b"\\",
        b"[",
        b"]",
        b"{",
        b"}",
        b",",
        b"\r",
        b"\n",
        BOM,
    ]
) | st.binary(min_size=1, max_size=3)


@st.composite
def mutated(draw: st.DrawFn, body: bytes) -> bytes:
    """``body`` with one byte-level change: truncate, insert, delete, replace or duplicate."""
    if not body:
        return draw(MUTATION_BYTES)
    at = draw(st.integers(0, len(body)))
    op = draw(st.sampled_from(["truncate", "insert", "delete", "replace", "duplicate"]))
    if op == "truncate":
        return body[:at]
    if op == "insert":
        return body[:at] + draw(MUTATION_BYTES) + body[at:]
    if op == "delete":
        return body[:at] + body[at + 1 :]
    if op == "replace":
        return body[:at] + draw(MUTATION_BYTES) + body[at + 1 :]
    return body[:at] + body[:at] + body[at:]


TERMINATORS = st.sampled_from([b"\n", b"\r\n", b"\r\r\n", b"\n\n", b" \n", b"\n\t\r\n"])


@st.composite
def streams(draw: st.DrawFn, max_frames: int = 4, small: bool = False) -> bytes:
    """Frames joined by terminators; maybe a BOM (or part of one) first, maybe no final terminator."""
    start = draw(st.integers(0, 11))
    parts: list[bytes] = [BOM] if start <= 1 else [BOM[: start - 1]] if start <= 3 else []
    for body in draw(st.lists(frames(small), max_size=max_frames)):
        parts.append(body)
        parts.append(draw(TERMINATORS))
    if parts and draw(st.booleans()) is True:  # (`is True`: mypy infers `draw` from `parts` otherwise)
        parts.pop()  # the final frame stays unterminated: close() decodes it
        if draw(st.integers(0, 3)) == 0:
            parts.append(b"\r")  # ... possibly ending in half a CRLF
    return b"".join(parts)


@st.composite
def split_points(draw: st.DrawFn, data: bytes) -> list[int]:
    """Sorted offsets in ``[0, len(data)]`` (duplicates allowed: empty chunks are legal)."""
    points = draw(st.lists(st.integers(0, len(data)), max_size=8))
    return sorted(points)


def inside_utf8(data: bytes) -> list[int]:
    """Every offset that falls strictly inside a multi-byte UTF-8 sequence (on continuation bytes)."""
    return [i for i in range(1, len(data)) if 0x80 <= data[i] <= 0xBF]


decoder_options = st.fixed_dictionaries(
    {},
    optional={
        "max_frame": st.integers(1, 40) | st.integers(41, 400),
        "lazy": st.booleans(),
        "batches": st.booleans(),
    },
)

# ---- correlation --------------------------------------------------------------------------------

correlation_keys = (
    st.integers(0, 6) | st.sampled_from(["0", "1", "a"]) | st.sampled_from(NEAR_LIMITS) | int_literals()
)
"""Ids for Correlator/IdMap calls: small ones that collide, strings, ints near the limits, any length
(``IntLiteral``: materialize before use)."""

first_ids = (
    st.sampled_from([1, 2, 2**53 - 1, 2**53, 2**53 + 1, 2**63 - 3, 2**63 - 2, 2**63 - 1])
    | st.integers(1, 2**63 - 1)
    | st.sampled_from([0, -1, 2**63, 2**64, True, 1.5, "1"])
)
"""``first_id`` values: the allocated range's edges, anything inside, and values it refuses."""
