"""JSON-RPC 2.0 and MCP error codes, as named constants (MCP method names: `mcpframe.protocol`);
`parse_error_data`, where a frame failed to parse; `recover_id`, the id of a request whose frame failed to
parse; and `response_shaped`, what tells a rejected response from a rejected request on either side of a
connection."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Final

__all__ = [
    "CONNECTION_CLOSED",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
    "parse_error_data",
    "recover_id",
    "response_shaped",
]

# JSON-RPC 2.0
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

# MCP (implementation-defined range)
RESOURCE_NOT_FOUND: Final = -32002
URL_ELICITATION_REQUIRED: Final = -32042
CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = -32001
# 2026-07-28 revision: -32020..-32099 belong to MCP
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022


# Digit runs are shortened before the stdlib parser reads a frame: it refuses integers longer than
# sys.get_int_max_str_digits() (4300 by default, never below 640), and the core may have rejected the frame
# for just that. The lookbehind starts a match only at the head of a run: each run is scanned once.
_LONG_DIGITS: Final = re.compile(rb"(?<![0-9])[0-9]{100,}")


# The core's nesting limit (`core.MAX_DEPTH`, docs/core-contract.md): this module sits below the core.
_MAX_DEPTH: Final = 128
# What the core's depth scan sees (a string, to its closing quote or the end, or a bracket), and what
# `recover_id` sees (the same, plus the colon that makes the string before it a key). Possessive.
_STRUCTURE: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
_KEYS: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)|[\[\]{}:]', re.DOTALL)
# A surrogate escape (its backslash may itself be escaped: `_lone_surrogate_at` counts the ones before it).
_SURROGATE: Final = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_INT_VALUE: Final = re.compile(rb"[ \t\r\n]*(-?(?:0|[1-9][0-9]{0,639}))(?![0-9.eE])")
_STR_VALUE: Final = re.compile(rb'[ \t\r\n]*("(?:[^"\\]++|\\.)*+")', re.DOTALL)
# Where `recover_id` and the nesting scan look: a request's id comes near its start in practice, and these
# scans step through tokens in Python, so a long frame must not cost more than its first 64 KiB.
# The stdlib's JSON reader, which says where a refused frame fails, reads as much (it builds every value:
# seconds for a 60 MB frame, on the event loop); an error it finds in a cut frame's head is kept unless the
# cut may have caused it (`_before_the_cut`), so a frame whose bad spot lies past the head gets its offset
# alone, as one refused for `NaN` does.
_RECOVER_SCAN: Final = 1 << 16
_CUT_MARGIN: Final = 16
# The stdlib ends some reasons with " at" or " starting at" (its message adds the position after them);
# the answer's `at` holds the position, so its `detail` reads without them.
_DANGLING_AT: Final = re.compile(r"(?: starting)? at\Z")
_BOM: Final = b"\xef\xbb\xbf"
_BOM_MISPLACED: Final = "a UTF-8 byte order mark (EF BB BF) is allowed only right before a message, not in it"
"""The ``detail`` of a -32700 for a byte order mark anywhere but at the start of a frame or body (one there
is dropped; a second one, or one after a space or inside a batch, is refused), not the stdlib's words."""
# A string, or a literal the stdlib reads as a float and the core refuses (`NaN`, `Infinity`, `-Infinity`).
_NON_FINITE: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+"|-?Infinity|NaN')


class _NonFinite(ValueError):
    """Raised from the stdlib's reader at the first ``NaN`` or ``Infinity`` literal of a refused frame."""


def _refuse_constant(name: str) -> float:
    raise _NonFinite(name)


def response_shaped(raw: bytes | None) -> bool:
    """Whether a frame is an object with ``result`` or ``error`` and no ``method``: a response.

    For frames the core rejected (a cold path): a rejected response must not be answered, and it fails the
    request it answers. Long digit runs are cut to one digit first; a number stays a number and a string a
    string, so the frame's shape is unchanged and a frame refused only for an over-long integer still reads.
    A frame longer than 64 KiB is judged by the top-level keys within its first 64 KiB.
    """
    if not raw:
        return False
    if len(raw) > _RECOVER_SCAN:  # the top-level keys of its head (the stdlib would build every value)
        head = raw[:_RECOVER_SCAN]
        if not head.lstrip(b" \t\r\n").startswith(b"{"):
            return False
        keys = _top_level_keys(head)
        return b'"method"' not in keys and (b'"result"' in keys or b'"error"' in keys)
    try:
        value = json.loads(_LONG_DIGITS.sub(b"0", raw))
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value)


def parse_error_data(raw: bytes | None, offset: int) -> dict[str, int | str]:
    """The ``data`` of a -32700 answer: where the refused frame starts in its stream (``offset``; 0 for an
    HTTP body) and, when the stdlib reading its bytes fails too, the byte of the frame where it fails
    (``at``) and its reason (``detail``).

    For frames the core rejected (a cold path; the frame is at most ``max_frame`` bytes). The core's
    ``message`` stays as it is (peers compare it); this says which line was bad when its ``id`` is null.
    Nesting past the core's limit and a lone surrogate escape (which the stdlib reads) are found by their
    own scans, a ``NaN`` or ``Infinity`` literal (which the stdlib reads) by its own scan when the stdlib
    meets it first; a frame whose fault lies past its first 64 KiB or that is not kept (``raw`` is None)
    gets its offset alone.
    """
    data: dict[str, int | str] = {"offset": offset}
    if raw is None:
        return data
    try:
        raw.decode("utf-8")  # the whole frame (at C speed); the stdlib's JSON reader reads its head only
    except UnicodeDecodeError as exc:
        data["at"], data["detail"] = exc.start, f"invalid UTF-8: {exc.reason}"
        return data
    too_deep = _too_deep_at(raw)  # the core checks nesting before the grammar (docs/core-contract.md)
    if too_deep is not None:
        data["at"], data["detail"] = too_deep, f"nesting deeper than {_MAX_DEPTH} levels"
        return data
    head = raw[:_RECOVER_SCAN].decode("utf-8", "ignore")  # a character cut at the window's edge is dropped
    try:
        json.loads(head, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:  # its position counts characters: the frame's byte is wanted
        if len(raw) <= _RECOVER_SCAN or _before_the_cut(exc, len(head)):
            at = len(head[: exc.pos].encode("utf-8"))
            data["at"] = at
            data["detail"] = _BOM_MISPLACED if raw[at : at + 3] == _BOM else _DANGLING_AT.sub("", exc.msg)
            return data
    except (ValueError, RecursionError) as exc:  # NaN or Infinity, or a number or nesting it cannot read
        if isinstance(exc, _NonFinite):  # read before any grammar error: the frame's own, even in a cut head
            data.update(_non_finite(raw, exc.args[0]))
        return data
    surrogate = _lone_surrogate_at(raw)
    if surrogate is not None:
        data["at"] = surrogate
        data["detail"] = f"lone surrogate {raw[surrogate : surrogate + 6].decode('ascii')} (not a character)"
    return data


def _non_finite(raw: bytes, literal: str) -> dict[str, int | str]:
    """Where the first ``NaN`` or ``Infinity`` literal (``literal``, outside strings) of ``raw`` is, and
    why it is refused; empty if the scan of the first 64 KiB does not find it."""
    for match in _NON_FINITE.finditer(raw, 0, _RECOVER_SCAN):
        if match[0][0] != 0x22:  # not a string
            return {"at": match.start(), "detail": f"{literal} is not valid JSON"}
    return {}


def _before_the_cut(exc: json.JSONDecodeError, end: int) -> bool:
    """Whether the stdlib's error in a frame's head (``end`` characters, cut from a longer frame) is the
    frame's own. A value the cut ends early is refused at the cut or at most a few characters before it
    (a literal, a number, an escape), except a string: refused where it starts, anywhere before."""
    return exc.pos < end - _CUT_MARGIN and exc.msg != "Unterminated string starting at"


def recover_id(raw: bytes | None) -> str | int | None:
    """The id of a request whose frame failed to parse, when it can be read exactly, else None.

    For frames the core rejected with a parse error (a cold path: the core's ``FrameError.id`` is None for
    those). The frame must start as an object with a top-level ``"method"`` key (a request, not a
    response: answering a broken response with its id would look like an answer to the peer's own request),
    and its last top-level ``"id"`` must be an integer literal (at most 640 digits) or a string of valid
    UTF-8 without surrogate escapes, within the first 64 KiB. Its answer then reaches the request that is
    waiting for it, as the answer to a request with a bad ``method`` does.

    >>> recover_id(b'{"jsonrpc":"2.0","id":7,"method":"p\\xffng"}'), recover_id(b'{"id":7,"result":1 x}')
    (7, None)
    """
    if raw is None or not raw.lstrip(b" \t\r\n").startswith(b"{"):
        return None
    head = raw[:_RECOVER_SCAN]
    found, method = None, False
    for key, value_start in _top_level_members(head):
        if key == b'"method"':
            method = True
        elif key == b'"id"':
            found = _id_at(head, value_start)
    return found if method else None


def _top_level_keys(head: bytes) -> set[bytes]:
    """The keys (quoted, as written) of the object ``head`` starts, as far as ``head`` goes."""
    return {key for key, _ in _top_level_members(head)}


def _top_level_members(head: bytes) -> Iterator[tuple[bytes, int]]:
    """Each depth-1 key (quoted, as written) of the object ``head`` starts, with the offset just past its
    colon (where its value starts), in order, as far as ``head`` goes or until that object closes."""
    depth, key = 0, b""
    for match in _KEYS.finditer(head):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                return
        elif token != b":":
            key = token
        elif depth == 1:
            yield key, match.end()


def _id_at(head: bytes, pos: int) -> str | int | None:
    """The integer or string value at ``pos`` (after an ``"id":``), if it reads exactly."""
    number = _INT_VALUE.match(head, pos)
    if number is not None and number.end() < len(head):  # at the end of a cut head it may go on past it
        return int(number.group(1))
    string = _STR_VALUE.match(head, pos)
    if string is None:
        return None
    try:
        value = json.loads(string.group(1).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(value, str) or any("\ud800" <= char <= "\udfff" for char in value):
        return None
    return value


def _too_deep_at(raw: bytes) -> int | None:
    """The byte where ``raw`` first nests deeper than the core allows (the core's depth scan), or None;
    only within its first 64 KiB (a Python loop: bounded)."""
    head = raw[:_RECOVER_SCAN]
    if head.count(b"[") + head.count(b"{") <= _MAX_DEPTH:
        return None
    depth = 0
    for match in _STRUCTURE.finditer(head):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > _MAX_DEPTH:
                return match.start()
        elif token in (b"]", b"}"):
            depth = max(depth - 1, 0)
    return None


def _lone_surrogate_at(raw: bytes) -> int | None:
    """The byte of the first ``\\u`` escape of a lone surrogate in ``raw`` (valid JSON), or None; only
    within its first 64 KiB, as the nesting scan (a Python loop over the surrogate escapes: bounded)."""
    head = raw[: _RECOVER_SCAN + 12]  # an escape pair that starts inside the window is read whole
    paired = -1  # where the low half of the last pair starts
    for match in _SURROGATE.finditer(head, 0, _RECOVER_SCAN):
        start = match.start()
        if start == paired:
            continue
        before = start
        while before and head[before - 1] == 0x5C:  # the backslashes before it: an odd count escapes it
            before -= 1
        if (start - before) % 2:  # `\\u...`: an escaped backslash, then text
            continue
        if (
            head[start + 3] in b"89abAB"
            and (low := _SURROGATE.match(head, start + 6))
            and low[0][3] in b"cdefCDEF"
        ):
            paired = start + 6
            continue
        return start
    return None
