"""Content helpers (text, image, audio, embedded resource, resource link) and return-value conversion.

Helpers return `Content`, a plain `dict` subclass holding exactly the wire shape, so results need no second
serialization step and a handler may also build the dicts by hand.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from .types import encode_hook

__all__ = [
    "Content",
    "PromptMessage",
    "ToolResult",
    "assistant",
    "audio",
    "blob_contents",
    "embedded_resource",
    "image",
    "resource_link",
    "text",
    "text_contents",
    "user",
]

Role = Literal["user", "assistant"]


class Content(dict[str, Any]):
    """One content block (the dict is the wire form). Build it with the helpers of this module."""


class PromptMessage(dict[str, Any]):
    """One prompt message, `{"role": ..., "content": ...}`. Build it with `user()` / `assistant()`."""


@dataclasses.dataclass(slots=True)
class ToolResult:
    """A tool result with full control: content blocks, structured content, error flag, `_meta`."""

    content: list[Any] = dataclasses.field(default_factory=list)
    structured: Any = None
    is_error: bool = False
    meta: dict[str, Any] | None = None


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def text(value: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """A text content block."""
    return _annotated(Content(type="text", text=value), annotations)


def image(data: bytes | str, mime_type: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """An image block; `data` is raw bytes or an already base64-encoded string."""
    return _annotated(Content(type="image", data=_b64(data), mimeType=mime_type), annotations)


def audio(data: bytes | str, mime_type: str, *, annotations: dict[str, Any] | None = None) -> Content:
    """An audio block (2025-03-26 and later); `data` is raw bytes or base64 text."""
    return _annotated(Content(type="audio", data=_b64(data), mimeType=mime_type), annotations)


def text_contents(uri: str, value: str, mime_type: str | None = "text/plain") -> dict[str, Any]:
    """A `TextResourceContents` object (for `resources/read` and embedded resources)."""
    out: dict[str, Any] = {"uri": uri, "text": value}
    if mime_type is not None:
        out["mimeType"] = mime_type
    return out


def blob_contents(uri: str, data: bytes | str, mime_type: str | None = None) -> dict[str, Any]:
    """A `BlobResourceContents` object; `data` is raw bytes or base64 text."""
    out: dict[str, Any] = {"uri": uri, "blob": _b64(data)}
    if mime_type is not None:
        out["mimeType"] = mime_type
    return out


def embedded_resource(
    uri: str,
    *,
    text: str | None = None,
    blob: bytes | str | None = None,
    mime_type: str | None = None,
    annotations: dict[str, Any] | None = None,
) -> Content:
    """An embedded resource block: give exactly one of `text` and `blob`."""
    if (text is None) == (blob is None):
        raise ValueError("embedded_resource() needs exactly one of text= and blob=")
    contents = (
        text_contents(uri, text, mime_type)
        if text is not None
        else blob_contents(uri, blob or b"", mime_type)
    )
    return _annotated(Content(type="resource", resource=contents), annotations)


def resource_link(
    uri: str,
    name: str,
    *,
    description: str | None = None,
    mime_type: str | None = None,
    title: str | None = None,
) -> Content:
    """A resource link block (2025-06-18 and later)."""
    out = Content(type="resource_link", uri=uri, name=name)
    for key, value in (("description", description), ("mimeType", mime_type), ("title", title)):
        if value is not None:
            out[key] = value
    return out


def _annotated(block: Content, annotations: dict[str, Any] | None) -> Content:
    if annotations:
        block["annotations"] = annotations
    return block


def user(content: str | dict[str, Any]) -> PromptMessage:
    """A prompt message from the user; a string becomes a text block."""
    return PromptMessage(role="user", content=text(content) if isinstance(content, str) else content)


def assistant(content: str | dict[str, Any]) -> PromptMessage:
    """A prompt message from the assistant; a string becomes a text block."""
    return PromptMessage(role="assistant", content=text(content) if isinstance(content, str) else content)


def to_json_text(value: Any) -> str:
    """Compact JSON text of any msgspec-encodable value (Structs, dataclasses, dicts, pydantic models...)."""
    return msgspec.json.encode(value, enc_hook=encode_hook).decode("utf-8")


def to_builtins(value: Any) -> Any:
    """Plain JSON data (dict/list/str/...) for any msgspec-encodable value (pydantic models and paths too)."""
    return msgspec.to_builtins(value, enc_hook=encode_hook)


_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


def _block(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item if item.get("type") in _CONTENT_TYPES else text(to_json_text(item))
    if isinstance(item, str):
        return text(item)
    return text(to_json_text(item))


def to_content(value: Any) -> list[dict[str, Any]]:
    """The content blocks for a tool's return value.

    `None` gives no blocks; a string one text block; a `Content` (or a dict whose `type` is a content type)
    itself; a list or tuple each of its items; anything else its JSON text.
    """
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [_block(item) for item in value]
    return [_block(value)]


def to_messages(value: Any) -> list[dict[str, Any]]:
    """The messages for a prompt's return value: a string, a message, a content block, or a list of them."""
    items: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, dict) and "role" in item:
            out.append(item)
        elif isinstance(item, str | dict):
            out.append(user(item))
        else:
            out.append(user(to_json_text(item)))
    return out
