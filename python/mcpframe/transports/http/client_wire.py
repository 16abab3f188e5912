"""Wire details of the Streamable HTTP client: reading Server-Sent Events and building request headers.

Kept apart from `client` so both can be tested without a network: `SSEParser` is an incremental parser of
the `text/event-stream` format (any line terminator, any chunking); the other helpers derive the MCP headers
of one outgoing JSON-RPC message.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any, Final

__all__ = [
    "MODERN_VERSION_KEY",
    "SSEEvent",
    "SSEParser",
    "encode_header_value",
    "mcp_name",
    "modern_version",
]

MODERN_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
"""The `_meta` key that makes a message 2026-07-28 (stateless) rather than part of an initialized session."""

_BASE64_PREFIX: Final = "=?base64?"
_BASE64_SUFFIX: Final = "?="
_NAME_PARAM: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "resources/unsubscribe": "uri",
}


@dataclasses.dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its type (`"message"` when none was given), its data and the id in force."""

    event: str
    data: bytes
    id: str | None


class SSEParser:
    """Turns the bytes of an SSE stream into events, following the HTML Living Standard's parsing rules.

    `last_event_id` and `retry` (milliseconds) are updated by every `id:` / `retry:` field, also by events
    without a `data` field, which are never dispatched (a priming event's empty `data:` is dispatched, with
    empty data). Work is linear in the bytes fed, however the stream is chunked.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0  # where the search for the next line terminator resumes
        self._data: list[bytes] = []
        self._has_data = False
        self._event = ""
        self.last_event_id: str | None = None
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse `chunk` and return the events it completed."""
        self._buf += chunk
        events: list[SSEEvent] = []
        for line in self._lines(final=False):
            self._line(line, events)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: a last unterminated line counts; an event not ended by a blank line is dropped."""
        events: list[SSEEvent] = []
        for line in self._lines(final=True):
            self._line(line, events)
        if self._buf:
            self._line(bytes(self._buf), events)
            self._buf.clear()
        self._reset_event()
        return events

    def _lines(self, *, final: bool) -> list[bytes]:
        buf = self._buf
        lines: list[bytes] = []
        start = 0
        pos = self._scan
        while True:
            lf = buf.find(b"\n", pos)
            cr = buf.find(b"\r", pos, lf if lf >= 0 else len(buf))
            if cr >= 0:
                if cr + 1 == len(buf) and not final:
                    pos = cr  # CR last: it may be the first half of a CRLF
                    break
                end = cr + 2 if cr + 1 < len(buf) and buf[cr + 1] == 0x0A else cr + 1
                lines.append(bytes(buf[start:cr]))
            elif lf >= 0:
                end = lf + 1
                lines.append(bytes(buf[start:lf]))
            else:
                pos = len(buf)
                break
            start = pos = end
        del buf[:start]
        self._scan = pos - start
        return lines

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[:1] == b":":
            return  # a comment (keep-alive)
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            self._has_data = True
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry = int(value)

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._has_data:
            data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
            events.append(SSEEvent(self._event or "message", data, self.last_event_id))
        self._reset_event()

    def _reset_event(self) -> None:
        self._data = []
        self._has_data = False
        self._event = ""


def encode_header_value(value: str) -> str:
    """A header-safe form of `value`: as is when plain visible ASCII, else `=?base64?<utf-8 base64>?=`."""
    plain = (
        value.isascii()
        and value.isprintable()
        and value == value.strip(" \t")
        and not (value.startswith(_BASE64_PREFIX) and value.endswith(_BASE64_SUFFIX))
    )
    if plain:
        return value
    return _BASE64_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _BASE64_SUFFIX


def modern_version(params: Any) -> str | None:
    """The protocol version in `params._meta` when the message is a 2026-07-28 one, else `None`."""
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    version = meta.get(MODERN_VERSION_KEY)
    return version if isinstance(version, str) else None


def mcp_name(method: str, params: Any) -> str | None:
    """What the `Mcp-Name` header carries for this method (tool/prompt name, resource URI), if anything."""
    key = _NAME_PARAM.get(method)
    if key is None or not isinstance(params, dict):
        return None
    value = params.get(key)
    return value if isinstance(value, str) else None
