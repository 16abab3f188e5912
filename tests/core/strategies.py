"""Hypothesis strategies for the core tests: JSON-RPC-ish envelopes, byte streams and chunkings.

Envelopes are mostly valid with a fair share of wrong members, then serialized with varied whitespace
and escaping, and sometimes mutated at the byte level (truncation, stray bytes, invalid UTF-8,
terminators in the middle). Streams join frames with LF, CRLF or a content CR before LF.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

BOM = b"\xef\xbb\xbf"

# Text that stresses escaping and UTF-8: ASCII, controls, quotes, 2/3/4-byte characters.
ALPHABET = st.sampled_from(
    [*'ab "\\/\n\r\t\x00\x1f\x7f', "\u00e9", "\u2028", "\u20ac", "\ufeff", "\U0001f600"]
)
text = st.text(alphabet=ALPHABET, max_size=8)
names = st.sampled_from(["tools/call", "ping", "notifications/progress", "", "m\u00e9", "a\nb"]) | text

integers = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from(
    [0, -1, 2**63, -(2**63) - 1, 2**64]
)
floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
scalars = st.none() | st.booleans() | integers | floats | text

json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)

valid_ids = st.integers(min_value=-(2**70), max_value=2**70) | text
any_ids = valid_ids | st.none() | st.booleans() | floats | st.lists(st.integers(), max_size=2) | st.just({})

error_objects = (
    st.fixed_dictionaries({"code": integers, "message": text}, optional={"data": json_values}) | json_values
)


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-RPC-ish object: usually a valid request, notification or response, often not."""
    shape = draw(st.sampled_from(["request", "notification", "result", "error", "junk"]))
    env: dict[str, Any] = {}
    if draw(st.integers(0, 9)) > 0:
        env["jsonrpc"] = draw(st.just("2.0") | st.sampled_from(["1.0", "2.0 ", 2.0, None]))
    if shape in ("request", "notification", "junk"):
        env["method"] = draw(names if draw(st.integers(0, 9)) > 0 else json_values)
        if draw(st.booleans()):
            params = st.dictionaries(text, json_values, max_size=3) | st.lists(json_values, max_size=3)
            env["params"] = draw(params if draw(st.integers(0, 9)) > 0 else json_values)
    if shape in ("request", "result", "error") or (shape == "junk" and draw(st.booleans())):
        env["id"] = draw(valid_ids if draw(st.integers(0, 5)) > 0 else any_ids)
    if shape == "result" or (shape == "junk" and draw(st.booleans())):
        env["result"] = draw(json_values)
    if shape == "error" or (shape == "junk" and draw(st.booleans())):
        env["error"] = draw(error_objects)
    if draw(st.integers(0, 7)) == 0:
        env[draw(text)] = draw(json_values)
    keys = list(env)
    order = draw(st.permutations(keys))
    return {k: env[k] for k in order}


@st.composite
def serialized(draw: st.DrawFn, value: Any) -> bytes:
    """``value`` as JSON text: compact or spaced, ASCII-escaped or raw UTF-8, never with a raw LF."""
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " : ")]))
    ascii_only = draw(st.booleans())
    text_form = json.dumps(value, separators=separators, ensure_ascii=ascii_only, allow_nan=False)
    return text_form.encode("utf-8", "surrogatepass")


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """One frame's bytes (no terminator): an envelope, a batch, a scalar, or a mutated one of these."""
    kind = draw(st.integers(0, 9))
    if kind <= 5:
        body = draw(serialized(draw(envelopes())))
    elif kind <= 7:
        body = draw(serialized(draw(st.lists(envelopes() | json_values, max_size=4))))
    else:
        body = draw(serialized(draw(json_values)))
    if draw(st.integers(0, 3)) == 0:
        body = draw(mutated(body))
    return body


MUTATION_BYTES = st.sampled_from(
    [b"\xff", b"\xc3", b"\x80", b"\xed\xa0\x80", b'"', b"\\", b"[", b"]", b"{", b"}", b",", b"\r", b"\n", BOM]
)


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
def streams(draw: st.DrawFn, max_frames: int = 4) -> bytes:
    """Frames joined by terminators; maybe a BOM first, maybe no final terminator."""
    parts: list[bytes] = [BOM] if draw(st.integers(0, 5)) == 0 else []
    for body in draw(st.lists(frames(), max_size=max_frames)):
        parts.append(body)
        parts.append(draw(TERMINATORS))
    if parts and draw(st.booleans()):
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
