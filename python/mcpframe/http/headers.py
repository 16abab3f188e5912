"""The Streamable HTTP headers: the names MCP adds (one list), Accept, Content-Type, the mirror headers.

These are facts of the HTTP binding only, so they live here rather than in `mcpframe.protocol`; the
server and the client both take them from this module. Names are lower-case: ASGI hands them over
lower-cased, `Reply` writes them so, and httpx compares them without regard to case.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from typing import Any, Final

from mcpframe import protocol

__all__ = [
    "BASE64_PREFIX",
    "BASE64_SUFFIX",
    "CLIENT_NAME_PARAMS",
    "FIRST_STATELESS",
    "LAST_EVENT_ID",
    "MCP_HEADERS",
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "NAME_PARAMS",
    "Accepts",
    "decode_header_value",
    "is_json_content",
    "mirror_mismatch",
    "repeated_header",
]

MCP_SESSION_ID: Final = "mcp-session-id"
"""The HTTP session a legacy (2025-xx) request belongs to; the server assigns it answering `initialize`."""
MCP_PROTOCOL_VERSION: Final = "mcp-protocol-version"
"""The revision a request speaks: the negotiated one in a session, the `_meta` one in 2026-07-28."""
MCP_METHOD: Final = "mcp-method"
"""2026-07-28: the JSON-RPC method of the body, mirrored so intermediaries can route without parsing it."""
MCP_NAME: Final = "mcp-name"
"""2026-07-28: the target of the body's method (tool or prompt name, resource URI), mirrored likewise."""
LAST_EVENT_ID: Final = "last-event-id"
"""SSE resumption: the last event id a client saw on the stream it resumes."""
MCP_HEADERS: Final = (MCP_SESSION_ID, MCP_PROTOCOL_VERSION, MCP_METHOD, MCP_NAME, LAST_EVENT_ID)
"""Every header the Streamable HTTP binding adds to plain HTTP."""

FIRST_STATELESS: Final = protocol.MODERN_VERSIONS[-1]
"""Revisions from this one on have no HTTP sessions (revision strings compare in date order)."""

NAME_PARAMS: Final = {
    protocol.TOOLS_CALL: "name",
    protocol.PROMPTS_GET: "name",
    protocol.RESOURCES_READ: "uri",
}
"""Methods whose target a 2026-07-28 request mirrors in `Mcp-Name` (the server checks these), and the
param it comes from."""
CLIENT_NAME_PARAMS: Final = {
    **NAME_PARAMS,
    protocol.RESOURCES_SUBSCRIBE: "uri",
    protocol.RESOURCES_UNSUBSCRIBE: "uri",
    # the tasks extension asks the client to name the task of these requests (a load balancer or a
    # gateway can route on it without reading the body)
    protocol.TASKS_GET: "taskId",
    protocol.TASKS_RESULT: "taskId",
    protocol.TASKS_CANCEL: "taskId",
    protocol.TASKS_UPDATE: "taskId",
}
"""What mcpframe's client names in `Mcp-Name`: the mirrored targets, the resource of (un)subscribe, and the
task of `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/update`."""

BASE64_PREFIX: Final = "=?base64?"
BASE64_SUFFIX: Final = "?="
"""A mirror header value that is not plain visible ASCII travels as `=?base64?<UTF-8, base64>?=`."""


@dataclasses.dataclass(frozen=True, slots=True)
class Accepts:
    """What an `Accept` header allows (a missing header allows everything)."""

    json: bool
    sse: bool

    @classmethod
    def parse(cls, header: str | None) -> Accepts:
        """Parse a comma-separated list of media ranges, ignoring parameters and `q=0` entries."""
        if header is None or not header.strip():
            return _ANY
        known = _PARSED.get(header)
        if known is not None:
            return known
        parsed = cls._parse(header)
        if len(_PARSED) < 256:  # a client sends the same header every time: remember a few
            _PARSED[header] = parsed
        return parsed

    @classmethod
    def _parse(cls, header: str) -> Accepts:
        json = sse = False
        for item in header.split(","):
            media, *params = (part.strip().lower() for part in item.split(";"))
            if any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000") for p in params):
                continue
            json = json or media in ("application/json", "application/*", "*/*")
            sse = sse or media in ("text/event-stream", "text/*", "*/*")
        return cls(json, sse)


_ANY = Accepts(True, True)
_PARSED: dict[str, Accepts] = {}


def is_json_content(header: str | None) -> bool:
    """Whether `Content-Type` names JSON (parameters such as `charset=utf-8` are fine)."""
    if header is None:
        return False
    media = header.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def decode_header_value(value: str | None) -> str | None:
    """A mirror header's value: plain ASCII, or `=?base64?...?=` carrying UTF-8 (`None` if malformed)."""
    if value is None:
        return None
    if not (value.startswith(BASE64_PREFIX) and value.endswith(BASE64_SUFFIX)):
        return value
    payload = value[len(BASE64_PREFIX) : len(value) - len(BASE64_SUFFIX)]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def mirror_mismatch(headers: dict[str, str], method: str, params: Any) -> str | None:
    """Why a 2026-07-28 request's headers disagree with its body, or `None` when they agree."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(protocol.PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    if headers.get(MCP_PROTOCOL_VERSION) != version:
        return "MCP-Protocol-Version header does not match the request's protocol version"
    if headers.get(MCP_METHOD) != method:
        return "Mcp-Method header does not match the request's method"
    key = NAME_PARAMS.get(method)
    if key is not None and isinstance(params, dict):
        value = params.get(key)
        if value is not None and decode_header_value(headers.get(MCP_NAME)) != value:
            return f"Mcp-Name header does not match the request's {key!r} parameter"
    return None


_SINGLE: Final = {
    b"host": "Host",
    b"origin": "Origin",
    b"content-length": "Content-Length",
    b"mcp-session-id": "Mcp-Session-Id",
    b"mcp-protocol-version": "MCP-Protocol-Version",
    b"last-event-id": "Last-Event-ID",
}
"""Headers a request may carry once: with two, one check could read one value and the handler the other
(a second `Host` gets 400, RFC 9112 §3.2; two differing `Content-Length`s too, §6.3)."""


def repeated_header(raw: Any) -> str | None:
    """The name of a header of `_SINGLE` that `raw` (ASGI's `(name, value)` pairs, lower-case names) repeats,
    or `None`; a `Content-Length` repeated with the same value is not (RFC 9112 §6.3 allows it). Callers ask
    only when the headers' dict is shorter than `raw` (some name came twice), so the common request pays a
    `len` compare."""
    seen: dict[bytes, bytes] = {}
    for name, value in raw:
        if name not in _SINGLE:
            continue
        if name not in seen:
            seen[name] = value
        elif name != b"content-length" or seen[name] != value:
            return _SINGLE[name]
    return None
