"""How the gateway names, pages and routes: prefixed names, merged-list cursors, resource URIs.

Names: `<server>__<tool>` (and prompts alike). The 2025-11-25 specification allows `[A-Za-z0-9_.-]{1,128}` in
tool names, so `.` would do for MCP; but LLM APIs the names end up in (function/tool names) accept only
`[A-Za-z0-9_-]`, so the separator is `__`. Server names never contain `__` nor end in `_` (config rule), so
the first `__` of a prefixed name is where the server's name ends: the split is never ambiguous.

Cursors: a merged list walks the servers in config order; the gateway's cursor is
`base64url(json [server, upstream cursor or null])`, opaque to the client as the specification wants.

Resources keep their URIs (URIs are global names already); the gateway remembers which server listed each
URI and each URI template, bounded by what the servers list.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, Final

from mcpframe import jsonrpc
from mcpframe.server.handlers import name_not_string
from mcpframe.session import JSONRPCError

__all__ = ["SEPARATOR", "UriRoutes", "decode_cursor", "encode_cursor", "prefixed", "split_name"]

SEPARATOR: Final = "__"


def prefixed(server: str, name: str) -> str:
    """The name the client sees for `name` of `server`."""
    return f"{server}{SEPARATOR}{name}"


def split_name(name: Any, what: str) -> tuple[str, str]:
    """`(server, name)` of a prefixed name; a clear -32602 when it has no prefix."""
    if not isinstance(name, str):
        raise JSONRPCError(jsonrpc.INVALID_PARAMS, name_not_string(what, name))
    if SEPARATOR not in name:
        raise JSONRPCError(
            jsonrpc.INVALID_PARAMS,
            f"unknown {what} {name!r}: through this gateway {what} names are <server>{SEPARATOR}<name>",
        )
    server, _, rest = name.partition(SEPARATOR)
    return server, rest


def encode_cursor(server: str, cursor: Any) -> str:
    """The gateway's opaque cursor for `server`'s page at its own `cursor` (None: its first page)."""
    raw = json.dumps([server, cursor], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: Any) -> tuple[str, Any]:
    """`(server, upstream cursor)` of a cursor this gateway made; -32602 for anything else."""
    try:
        if not isinstance(cursor, str):
            raise ValueError
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        server, upstream = json.loads(raw)
        if not isinstance(server, str):
            raise ValueError
    except (ValueError, TypeError, binascii.Error):
        raise JSONRPCError(
            jsonrpc.INVALID_PARAMS, f"invalid cursor {cursor!r}: not one this gateway gave"
        ) from None
    return server, upstream


_EXPRESSION: Final = re.compile(r"\{([+#./;?&]?)[^}]*\}")


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex matching the URIs an RFC 6570 template expands to (`{x}`: one segment, `{+x}`: anything)."""
    parts: list[str] = []
    last = 0
    for match in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[last : match.start()]))
        parts.append(".*" if match.group(1) in ("+", "#") else "[^/?#]*")
        last = match.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts))


class UriRoutes:
    """Which server listed each resource URI and each URI template (the last to list one wins)."""

    def __init__(self) -> None:
        self._uris: dict[str, str] = {}
        self._templates: dict[str, tuple[re.Pattern[str], str]] = {}

    def add_resources(self, server: str, resources: Any) -> None:
        """Remember the URIs of one page of `server`'s `resources/list`."""
        for item in resources if isinstance(resources, list) else ():
            uri = item.get("uri") if isinstance(item, dict) else None
            if isinstance(uri, str):
                self._uris[uri] = server

    def add_templates(self, server: str, templates: Any) -> None:
        """Remember the templates of one page of `server`'s `resources/templates/list`."""
        for item in templates if isinstance(templates, list) else ():
            template = item.get("uriTemplate") if isinstance(item, dict) else None
            if isinstance(template, str):
                self._templates[template] = (template_pattern(template), server)

    def forget(self, server: str) -> None:
        """`server` went away: its URIs route nowhere until it lists them again."""
        self._uris = {uri: owner for uri, owner in self._uris.items() if owner != server}
        self._templates = {t: entry for t, entry in self._templates.items() if entry[1] != server}

    def owner(self, uri: str) -> str | None:
        """The server that listed `uri`, else the one with a template matching it (or one equal to it: a
        completion's `ref/resource` names the template itself)."""
        server = self._uris.get(uri)
        if server is not None:
            return server
        entry = self._templates.get(uri)
        if entry is not None:
            return entry[1]
        for pattern, owner in self._templates.values():
            if pattern.fullmatch(uri):
                return owner
        return None
