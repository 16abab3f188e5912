"""JSON-RPC 2.0 and MCP error codes, as named constants (MCP method names: `mcpframe.protocol`);
`parse_error_data`, where a frame failed to parse; and `response_shaped`, what tells a rejected response
from a rejected request on either side of a connection."""

from __future__ import annotations

import json
import re
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


def response_shaped(raw: bytes | None) -> bool:
    """Whether a frame is an object with ``result`` or ``error`` and no ``method``: a response.

    For frames the core rejected (a cold path): a rejected response must not be answered, and it fails the
    request it answers. Long digit runs are cut to one digit first; a number stays a number and a string a
    string, so the frame's shape is unchanged and a frame refused only for an over-long integer still reads.
    """
    if not raw:
        return False
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
    A frame the stdlib accepts (the core refused it for another reason: a lone surrogate, nesting, a long
    number) or that it cannot read (``raw`` not kept) gets its offset alone.
    """
    data: dict[str, int | str] = {"offset": offset}
    if raw is None:
        return data
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        data["at"], data["detail"] = exc.start, f"invalid UTF-8: {exc.reason}"
        return data
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:  # its position counts characters: the frame's byte is wanted
        data["at"], data["detail"] = len(text[: exc.pos].encode("utf-8")), exc.msg
    except (ValueError, RecursionError):
        pass
    return data
