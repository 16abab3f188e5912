"""What a server offers: tools, resources, resource templates, prompts and completers.

Each entry is built once at registration (schema, argument Struct, wire description) so listing and calling
do no per-request introspection. The registry tells its listeners when a list changes, which is how
`notifications/*/list_changed` reach connected clients.
"""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from mcpframe import jsonrpc
from mcpframe.session import JSONRPCError

from .schema import Signature

__all__ = [
    "Completer",
    "ListKind",
    "Prompt",
    "Registry",
    "Resource",
    "ResourceTemplate",
    "Tool",
    "compile_template",
    "paginate",
]

ListKind = Literal["tools", "resources", "prompts"]
Completer = Callable[..., Any]
T = TypeVar("T")


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}


@dataclasses.dataclass(slots=True)
class Tool:
    """A registered tool."""

    name: str
    fn: Callable[..., Any]
    signature: Signature
    wire: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    wrap_result: bool = False
    # None when results are not checked: no output schema, or a verbatim one without `jsonschema` installed
    check_output: Callable[[Any], str | None] | None = None
    # execution.taskSupport (2025-11-25 tasks): "forbidden" (the default), "optional" or "required"
    task_support: Literal["forbidden", "optional", "required"] = "forbidden"


@dataclasses.dataclass(slots=True)
class Resource:
    """A registered resource with a fixed URI."""

    uri: str
    fn: Callable[..., Any]
    signature: Signature
    wire: dict[str, Any]
    mime_type: str | None = None


@dataclasses.dataclass(slots=True)
class ResourceTemplate:
    """A resource template (`test://items/{id}`): the handler receives the URI's variables."""

    uri_template: str
    pattern: re.Pattern[str]
    fn: Callable[..., Any]
    signature: Signature
    wire: dict[str, Any]
    mime_type: str | None = None

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables for `uri`, or None when it does not match."""
        found = self.pattern.fullmatch(uri)
        return found.groupdict() if found else None


@dataclasses.dataclass(slots=True)
class Prompt:
    """A registered prompt."""

    name: str
    fn: Callable[..., Any]
    signature: Signature
    wire: dict[str, Any]
    required: frozenset[str] = frozenset()


_VAR = re.compile(r"\{([+#]?)([A-Za-z_][A-Za-z0-9_]*)(\*?)\}")


def compile_template(template: str) -> tuple[re.Pattern[str], list[str]]:
    """A regex for an RFC 6570 level-1 style template.

    `{name}` matches one path segment (no `/`); `{+name}` or `{name*}` match the rest, slashes included.
    """
    parts: list[str] = []
    names: list[str] = []
    last = 0
    for found in _VAR.finditer(template):
        parts.append(re.escape(template[last : found.start()]))
        op, name, star = found.groups()
        if name in names:
            raise ValueError(f"template {template!r} repeats the variable {name!r}")
        names.append(name)
        parts.append(f"(?P<{name}>.+)" if op == "+" or star else f"(?P<{name}>[^/]+)")
        last = found.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts)), names


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"mcpframe:{offset}".encode()).decode("ascii")


def _decode_cursor(cursor: Any) -> int:
    try:
        text = base64.urlsafe_b64decode(str(cursor).encode("ascii")).decode("ascii")
        prefix, _, number = text.partition(":")
        offset = int(number)
        if prefix != "mcpframe" or offset < 0:
            raise ValueError(cursor)
    except (ValueError, UnicodeError):
        raise JSONRPCError(jsonrpc.INVALID_PARAMS, "Invalid params: unknown cursor") from None
    return offset


def paginate(items: Sequence[T], cursor: Any, page_size: int | None) -> tuple[Sequence[T], str | None]:
    """One page of `items` after the opaque `cursor`, and the cursor of the next page (None at the end)."""
    start = 0 if cursor is None else _decode_cursor(cursor)
    if page_size is None:
        return items[start:], None
    end = start + page_size
    return items[start:end], (_encode_cursor(end) if end < len(items) else None)


class Registry:
    """Ordered maps of everything a server offers, with change listeners."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.threaded_tools: set[str] = set()
        """The names of the tools whose call goes to a worker thread at once: `def` tools that do not run as
        tasks (`Server.suspends`). `add_tool` and `remove` keep it current."""
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        self.completers: dict[tuple[str, str, str], Completer] = {}
        self._listeners: list[Callable[[ListKind], None]] = []

    def listen(self, callback: Callable[[ListKind], None]) -> Callable[[], None]:
        """Call `callback(kind)` after every change; returns a function that stops it."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback)

    def changed(self, kind: ListKind) -> None:
        """Tell every listener that the `kind` list changed."""
        for callback in list(self._listeners):
            callback(kind)

    def add_tool(self, tool: Tool) -> None:
        """Add or replace a tool."""
        self.tools[tool.name] = tool
        if tool.signature.is_async or tool.task_support != "forbidden":
            self.threaded_tools.discard(tool.name)
        else:
            self.threaded_tools.add(tool.name)
        self.changed("tools")

    def add_resource(self, resource: Resource) -> None:
        """Add or replace a resource."""
        self.resources[resource.uri] = resource
        self.changed("resources")

    def add_template(self, template: ResourceTemplate) -> None:
        """Add or replace a resource template."""
        self.templates[template.uri_template] = template
        self.changed("resources")

    def add_prompt(self, prompt: Prompt) -> None:
        """Add or replace a prompt."""
        self.prompts[prompt.name] = prompt
        self.changed("prompts")

    def remove(self, kind: ListKind, key: str) -> bool:
        """Remove a tool, prompt, resource or template by name/URI; True if it was there."""
        if kind == "tools":
            found = self.tools.pop(key, None) is not None
            self.threaded_tools.discard(key)
        elif kind == "prompts":
            found = self.prompts.pop(key, None) is not None
        else:
            found = (self.resources.pop(key, None) or self.templates.pop(key, None)) is not None
        if found:
            self.changed(kind)
        return found

    def find_resource(self, uri: str) -> tuple[Resource | ResourceTemplate, dict[str, str]] | None:
        """The resource for `uri`: an exact URI first, then the first template that matches."""
        exact = self.resources.get(uri)
        if exact is not None:
            return exact, {}
        for template in list(self.templates.values()):  # registration may run on another thread
            found = template.match(uri)
            if found is not None:
                return template, found
        return None


def describe(**fields: Any) -> dict[str, Any]:
    """A wire description without its None members."""
    return _drop_none(fields)
