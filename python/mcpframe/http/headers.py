"""Reading the Streamable HTTP request headers: Accept, Content-Type, and the 2026-07-28 mirror headers."""

from __future__ import annotations

import base64
import binascii
import dataclasses
from typing import Any

from mcpframe.server.eras import PROTOCOL_VERSION_KEY

__all__ = [
    "NAME_PARAMS",
    "Accepts",
    "decode_header_value",
    "is_json_content",
    "mirror_mismatch",
]

NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""Methods whose target is mirrored in `Mcp-Name`, and the param it comes from."""

_B64_PREFIX = "=?base64?"
_B64_SUFFIX = "?="


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
    if not (value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX)):
        return value
    payload = value[len(_B64_PREFIX) : len(value) - len(_B64_SUFFIX)]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def mirror_mismatch(headers: dict[str, str], method: str, params: Any) -> str | None:
    """Why a 2026-07-28 request's headers disagree with its body, or `None` when they agree."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    if headers.get("mcp-protocol-version") != version:
        return "MCP-Protocol-Version header does not match the request's protocol version"
    if headers.get("mcp-method") != method:
        return "Mcp-Method header does not match the request's method"
    key = NAME_PARAMS.get(method)
    if key is not None and isinstance(params, dict):
        value = params.get(key)
        if value is not None and decode_header_value(headers.get("mcp-name")) != value:
            return f"Mcp-Name header does not match the request's {key!r} parameter"
    return None
