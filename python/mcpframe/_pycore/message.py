"""``Message`` and ``FrameError``: the two values a decoder produces (see ``docs/core-contract.md``).

``Message`` is immutable and not constructible from Python. Instances are built (in ``envelope``) on
``MessageBuilder``, a mutable twin class with the same slot layout, then switched to ``Message``:
plain slot stores are several times cheaper than ``object.__setattr__`` on a frozen class, and the
hot path builds one ``Message`` per frame.
"""

from __future__ import annotations

from typing import Any, Literal, NoReturn

from mcpframe._api import Id
from mcpframe._pycore import scan
from mcpframe._pycore.encode import encode_error, encode_id

__all__ = ["FrameError", "Message", "MessageBuilder"]

Kind = Literal["request", "notification", "result", "error"]

# Slots that hold the raw spans, filled on first use of a raw_* attribute (``None`` = not yet scanned).
_SPAN_NAMES = ("id", "params", "result", "error")


class _MessageSlots:
    __slots__ = (
        "_spans",
        "batch",
        "error",
        "id",
        "kind",
        "lazy",
        "method",
        "offset",
        "params",
        "raw",
        "result",
    )

    kind: Kind
    id: Id | None
    method: str | None
    params: Any
    result: Any
    error: dict[str, Any] | None
    raw: bytes
    offset: int
    batch: int | None
    lazy: bool
    _spans: dict[str, tuple[int, int]] | None


class MessageBuilder(_MessageSlots):
    """The mutable twin of ``Message`` (same slots): fill it, then set ``__class__ = Message``."""

    __slots__ = ()


class Message(_MessageSlots):
    """One valid JSON-RPC 2.0 message of a frame (or of a batch element). Immutable."""

    __slots__ = ()

    def __new__(cls, *args: object, **kwargs: object) -> Message:
        raise TypeError("cannot create 'Message' instances")

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"'Message' object attribute '{name}' is read-only")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"'Message' object attribute '{name}' is read-only")

    def __reduce__(self) -> NoReturn:
        # without it, protocols 0 and 1 wrote a message that could not be loaded
        raise TypeError(
            "cannot pickle 'Message' object: pickle its raw bytes (message.raw) and decode them again"
        )

    def _span(self, name: str) -> tuple[int, int] | None:
        spans = self._spans
        if spans is None:
            spans = scan.member_spans(self.raw)
            object.__setattr__(self, "_spans", spans)
        return spans.get(name)

    def _raw_member(self, name: str) -> bytes | None:
        span = self._span(name)
        return None if span is None else self.raw[span[0] : span[1]]

    @property
    def raw_id(self) -> bytes | None:
        """Exact bytes of the top-level ``id`` value, ``None`` when absent."""
        return self._raw_member("id")

    @property
    def raw_params(self) -> bytes | None:
        """Exact bytes of the top-level ``params`` value, ``None`` when absent."""
        return self._raw_member("params")

    @property
    def raw_result(self) -> bytes | None:
        """Exact bytes of the top-level ``result`` value, ``None`` when absent."""
        return self._raw_member("result")

    @property
    def raw_error(self) -> bytes | None:
        """Exact bytes of the top-level ``error`` value, ``None`` when absent."""
        return self._raw_member("error")

    def with_id(self, new_id: Id, /) -> bytes:
        """``raw`` with the top-level ``id`` value replaced by ``new_id`` (JSON), other bytes unchanged."""
        text = encode_id(new_id)
        span = self._span("id")
        if self.id is None or span is None:
            raise ValueError("message has no id")
        raw = self.raw
        return raw[: span[0]] + text + raw[span[1] :]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return (
            self.kind == other.kind
            and self.offset == other.offset
            and self.batch == other.batch
            and self.raw == other.raw
            and _same(self.id, other.id)
            and self.method == other.method
            and self.params == other.params
            and self.result == other.result
            and self.error == other.error
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Message(kind={self.kind!r}, id={self.id!r}, method={self.method!r})"


def _same(a: object, b: object) -> bool:
    # 1 == True in Python; ids are never bools, but keep int and str ids apart explicitly.
    return type(a) is type(b) and a == b


_SIGNATURE = "FrameError(code: int, message: str, *, id, offset, preview, batch, notification, raw)"


class FrameError:
    """A frame (or batch element) that is not a valid message: what to answer, and where it was.

    ``FrameError(code, message, *, id=None, offset=0, preview=b"", batch=None, notification=False,
    raw=None)``; ``raw`` holds the rejected bytes (``None`` for an oversize frame, never held whole).
    """

    __slots__ = ("batch", "code", "id", "message", "notification", "offset", "preview", "raw")

    code: int
    message: str
    id: Id | None
    offset: int
    preview: bytes
    batch: int | None
    notification: bool
    raw: bytes | None

    def __init__(
        self,
        code: int,
        message: str,
        *,
        id: Id | None = None,
        offset: int = 0,
        preview: bytes = b"",
        batch: int | None = None,
        notification: bool = False,
        raw: bytes | None = None,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "code", code)
        setattr_(self, "message", message)
        setattr_(self, "id", id)
        setattr_(self, "offset", offset)
        setattr_(self, "preview", bytes(preview))
        setattr_(self, "batch", batch)
        setattr_(self, "notification", notification)
        setattr_(self, "raw", _optional_bytes(raw))
        _check_fields(self)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"'FrameError' object attribute '{name}' is read-only")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"'FrameError' object attribute '{name}' is read-only")

    def to_response(self) -> bytes:
        """The NDJSON error response for this error (``id`` or ``null``, ``code``, ``message``)."""
        return encode_error(self.id, self.code, self.message)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FrameError):
            return NotImplemented
        return (
            self.code == other.code
            and self.message == other.message
            and _same(self.id, other.id)
            and self.offset == other.offset
            and self.preview == other.preview
            and self.batch == other.batch
            and self.notification == other.notification
            and self.raw == other.raw
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FrameError(code={self.code!r}, message={self.message!r}, offset={self.offset!r})"


def _check_fields(error: FrameError) -> None:
    ident = error.id
    ok = (
        _is_int(error.code)
        and isinstance(error.message, str)
        and (ident is None or _is_int(ident) or isinstance(ident, str))
        and _is_int(error.offset)
        and (error.batch is None or _is_int(error.batch))
        and isinstance(error.notification, bool)
    )
    if not ok:
        raise TypeError(_SIGNATURE)


def _optional_bytes(value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(_SIGNATURE)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
