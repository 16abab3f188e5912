"""Helpers shared by the core tests: feeding in chunks, and backend-neutral views of results.

A native ``Message`` never equals a Python one (different classes), so differential tests compare
``canon()`` views: tagged tuples in which ``1``, ``1.0`` and ``True`` differ and floats compare by bits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

MESSAGE_FIELDS = (
    "kind",
    "id",
    "method",
    "params",
    "result",
    "error",
    "raw",
    "raw_id",
    "raw_params",
    "raw_result",
    "raw_error",
    "offset",
    "batch",
)
ERROR_FIELDS = ("code", "message", "id", "offset", "preview", "batch", "notification", "raw")


def split_at(data: bytes, points: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given offsets (sorted, duplicates allowed: they give empty chunks)."""
    chunks, start = [], 0
    for point in sorted(points):
        chunks.append(data[start:point])
        start = point
    chunks.append(data[start:])
    return chunks


def fixed_chunks(data: bytes, size: int) -> list[bytes]:
    """``data`` in chunks of ``size`` bytes (the last one shorter)."""
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def feed_all(backend: ModuleType, chunks: Sequence[bytes], **options: Any) -> list[Any]:
    """Feed every chunk to a fresh decoder, then close it; everything produced, in order."""
    decoder = backend.Decoder(**options)
    out: list[Any] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return out


def stream(backend: ModuleType, data: bytes, **options: Any) -> list[Any]:
    """``data`` fed in one chunk, then closed."""
    return feed_all(backend, [data], **options)


def canon_value(value: Any) -> Any:
    """A view of a decoded JSON value in which equal views mean equal types and values."""
    if isinstance(value, bool) or value is None:
        return ("const", value)
    if isinstance(value, list):
        return ("list", tuple(canon_value(v) for v in value))
    if isinstance(value, dict):
        return ("dict", {k: canon_value(v) for k, v in value.items()})
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, int | str):
        return (type(value).__name__, value)
    return ("other", type(value).__name__, repr(value))


def is_message(item: Any) -> bool:
    """Whether ``item`` is a Message (duck-typed: works for either backend)."""
    return hasattr(item, "kind")


def canon(item: Any) -> tuple[Any, ...]:
    """A backend-neutral view of a Message or FrameError, every contract field included."""
    if is_message(item):
        fields: list[Any] = ["Message"]
        for name in MESSAGE_FIELDS:
            value = getattr(item, name)
            fields.append(canon_value(value) if name in ("params", "result", "error", "id") else value)
        return tuple(fields)
    view: list[Any] = ["FrameError"]
    for name in ERROR_FIELDS:
        value = getattr(item, name)
        view.append(canon_value(value) if name == "id" else value)
    return tuple(view)


def canon_all(items: Iterable[Any]) -> list[tuple[Any, ...]]:
    """``canon`` of each item."""
    return [canon(item) for item in items]


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """The result of ``call()`` or the exception it raised, as a comparable view."""
    try:
        result = call()
    except Exception as exc:  # the class and message are what both backends must agree on
        return ("raised", type(exc), str(exc))
    if isinstance(result, list) and all(is_message(i) or hasattr(i, "preview") for i in result):
        return ("returned", canon_all(result))
    return ("returned", result)


def summary(item: Any) -> tuple[Any, ...]:
    """A short readable view for table tests: ``("msg", kind, id)`` or ``("err", code, message)``."""
    if is_message(item):
        return ("msg", item.kind, item.id)
    return ("err", item.code, item.message)


def located(items: Sequence[object]) -> list[tuple[object, ...]]:
    """Each item with its offset, as ("error", code, message, offset) or ("message", id, params, offset)."""
    out: list[tuple[object, ...]] = []
    for item in items:
        if hasattr(item, "code"):
            out.append(("error", item.code, item.message, item.offset))  # type: ignore[attr-defined]
        else:
            out.append(("message", item.id, item.params, item.offset))  # type: ignore[attr-defined]
    return out
