"""Stub of ``mcpframe._core``, the native backend of ``mcpframe.core`` (see ``docs/core-contract.md``).

Its ``__all__`` is the one list of the core's names. ``mcpframe._pycore`` exports the same list and
``mcpframe.core`` re-exports the chosen backend's; stubtest holds the native module to this stub,
mypy holds both backends to ``mcpframe._api.CoreBackend``, ``tests/core/test_contract.py`` checks the
rest (the same names and signatures at run time, and a protocol member for each name here).
"""

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Final, Literal, Self, final

__all__ = [
    "DEFAULT_MAX_FRAME",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "PREVIEW_BYTES",
    "AnswerRelay",
    "Correlator",
    "Decoder",
    "FrameError",
    "IdMap",
    "Message",
    "Relay",
    "decode",
    "encode",
    "encode_error",
    "encode_many",
    "encode_notification",
    "encode_request",
    "encode_result",
    "header_dict",
    "plain_call",
    "plain_request",
    "splice_id",
    "value_span",
]

_Id = int | str
_Buffer = bytes | bytearray | memoryview
_Kind = Literal["request", "notification", "result", "error"]

MAX_DEPTH: Final = 128
MAX_INT_DIGITS: Final = 4300
DEFAULT_MAX_FRAME: Final = 67108864
PREVIEW_BYTES: Final = 64

@final
class Message:
    """One valid JSON-RPC message of a frame (or of a batch element); immutable."""

    @property
    def kind(self) -> _Kind: ...
    @property
    def id(self) -> _Id | None: ...
    @property
    def method(self) -> str | None: ...
    @property
    def params(self) -> Any: ...
    @property
    def result(self) -> Any: ...
    @property
    def error(self) -> dict[str, Any] | None: ...
    @property
    def raw(self) -> bytes: ...
    @property
    def raw_id(self) -> bytes | None: ...
    @property
    def raw_params(self) -> bytes | None: ...
    @property
    def raw_result(self) -> bytes | None: ...
    @property
    def raw_error(self) -> bytes | None: ...
    @property
    def offset(self) -> int: ...
    @property
    def batch(self) -> int | None: ...
    @property
    def lazy(self) -> bool: ...
    def with_id(self, new_id: _Id, /) -> bytes:
        """``raw`` with the top-level id replaced by ``new_id``; ``ValueError`` without an id."""
    def __eq__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class FrameError:
    """A frame (or batch element) that is not a valid message; immutable."""

    def __new__(
        cls,
        code: int,
        message: str,
        *,
        id: _Id | None = None,
        offset: int = 0,
        preview: bytes = b"",
        batch: int | None = None,
        notification: bool = False,
        raw: bytes | None = None,
    ) -> Self: ...
    @property
    def code(self) -> int: ...
    @property
    def message(self) -> str: ...
    @property
    def id(self) -> _Id | None: ...
    @property
    def offset(self) -> int: ...
    @property
    def preview(self) -> bytes: ...
    @property
    def batch(self) -> int | None: ...
    @property
    def notification(self) -> bool: ...
    @property
    def raw(self) -> bytes | None: ...
    def to_response(self) -> bytes:
        """The NDJSON error response for this error."""
    def __eq__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class Decoder:
    """Incremental NDJSON decoder: bytes in, messages and frame errors out, in stream order."""

    def __new__(cls, *, max_frame: int = 67108864, lazy: bool = False, batches: bool = True) -> Self: ...
    def feed(self, data: _Buffer, /) -> list[Message | FrameError]:
        """Everything the bytes complete, in stream order."""
    def close(self) -> list[Message | FrameError]:
        """End the stream; an unterminated final frame is decoded."""
    @property
    def max_frame(self) -> int: ...
    @property
    def lazy(self) -> bool: ...
    @property
    def batches(self) -> bool: ...
    @property
    def offset(self) -> int: ...
    @property
    def buffered(self) -> int: ...
    @property
    def closed(self) -> bool: ...

@final
class Relay:
    """A client session's bytes towards a proxy's upstream: plain requests (ids mapped in ``idmap``
    and spliced) and notifications relayed in one ``bytes``; from the first frame that needs a
    decision on, the chunk's frames are held (raw ``bytes``, or an oversize ``FrameError``)."""

    def __new__(cls, idmap: IdMap, conn: int, *, max_frame: int = 67108864) -> Self: ...
    @property
    def conn(self) -> int: ...
    @property
    def max_frame(self) -> int: ...
    @property
    def requests(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def feed(self, chunk: _Buffer, /) -> tuple[bytes, list[tuple[int, bytes] | FrameError]]:
        """Relay what ``chunk`` completes: ``(relayed bytes, held frames)``."""
    def close(self) -> tuple[bytes, list[tuple[int, bytes] | FrameError]]:
        """End the stream: an unterminated last frame is relayed or held as if terminated."""

@final
class AnswerRelay:
    """The upstream's bytes towards the client sessions: answers to requests mapped in ``idmap`` (and
    not held by ``IdMap.hold``) get their client's id back, grouped per connection; from the first
    other frame on, the chunk's frames are held (``(stream offset, raw bytes)``, or an oversize
    ``FrameError``)."""

    def __new__(cls, idmap: IdMap, *, max_frame: int = 67108864) -> Self: ...
    @property
    def max_frame(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def feed(self, chunk: _Buffer, /) -> tuple[list[tuple[int, bytes]], list[tuple[int, bytes] | FrameError]]:
        """Relay what ``chunk`` completes: ``([(conn, relayed bytes), ...], held frames)``."""
    def close(self) -> tuple[list[tuple[int, bytes]], list[tuple[int, bytes] | FrameError]]:
        """End the stream: an unterminated last frame is relayed or held as if terminated."""

def decode(
    data: _Buffer, /, *, max_frame: int = 67108864, lazy: bool = False, batches: bool = True
) -> list[Message | FrameError]:
    """Decode a whole body (an HTTP POST body) as one frame."""

def splice_id(frame: bytes, new_id: _Id, /) -> bytes:
    """Rewrite the top-level id of a raw frame without re-encoding anything else."""

def value_span(frame: bytes, path: Sequence[str], /) -> tuple[int, int] | None:
    """The ``(start, end)`` byte span of the value at the key ``path`` in a raw message, or None."""

def plain_request(
    data: bytes, start: int, /
) -> tuple[str, bytes, list[tuple[bytes, bytes]], bytes, int] | None:
    """``(method, target, headers, body, next)`` of the plain HTTP/1.1 request at ``data[start]``, or None."""

def header_dict(headers: list[tuple[bytes, bytes]], /) -> dict[str, str]:
    """``{name: value}`` of ``(name, value)`` bytes pairs, Latin-1 decoded; of a repeated name, the first."""

def plain_call(body: bytes, max_frame: int, /) -> tuple[_Id, str, bytes] | None:
    """``(id, method, line)`` of a POST body that is one plain request (the listening proxy's), or None."""

def encode_request(id: _Id, method: str, params: Any = None, /) -> bytes:
    """``{"jsonrpc":"2.0","id":…,"method":…,"params":…}`` + LF; ``params`` omitted when None.

    Like every encoder, checks its arguments left to right, each whole (type, then value): the
    leftmost bad one decides between ``TypeError`` (a wrong type) and ``EncodeError`` (a bad value).
    """

def encode_notification(method: str, params: Any = None, /) -> bytes:
    """``{"jsonrpc":"2.0","method":…,"params":…}`` + LF; ``params`` omitted when None."""

def encode_result(id: _Id, result: Any, /) -> bytes:
    """``{"jsonrpc":"2.0","id":…,"result":…}`` + LF."""

def encode_error(id: _Id | None, code: int, message: str, /, data: Any = ...) -> bytes:
    """``{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…,"data":…}}`` + LF.

    ``data`` is omitted when not passed; ``data=None`` is written as ``null``.
    """

def encode(message: Any, /) -> bytes:
    """Any JSON value as one compact line + LF."""

def encode_many(messages: Iterable[Any], /) -> bytes:
    """The concatenation of ``encode(m)`` for each ``m``."""

@final
class Correlator:
    """Pending outgoing requests: id -> waiter, with integer id allocation and a limit.

    Ids given are any ``int`` (exact at any size) or ``str``. Allocated ids lie in ``1 ..= 2**63 - 1``:
    ``max_pending`` and ``first_id`` must be ints in that range (``ValueError`` otherwise).
    """

    def __new__(cls, *, max_pending: int = 65536, first_id: int = 1) -> Self: ...
    @property
    def max_pending(self) -> int: ...
    def next_id(self) -> int:
        """The next integer id not in flight (counts up, skips busy ids, wraps from ``2**63 - 1`` to 1)."""
    def allocate(self, waiter: object, /) -> int:
        """``next_id()`` and ``register()`` in one call."""
    def register(self, id: _Id, waiter: object, /) -> None:
        """Add ``waiter`` under ``id``: ``DuplicateIdError``, ``PendingLimitError``."""
    def resolve(self, id: _Id, /) -> object:
        """Remove and return the waiter; ``UnknownIdError`` if none."""
    def pop(self, id: _Id, default: object = None, /) -> object:
        """Remove and return the waiter, or ``default``."""
    def get(self, id: _Id, default: object = None, /) -> object:
        """The waiter (left in place), or ``default``."""
    def drain(self) -> list[tuple[_Id, object]]:
        """Remove all entries, returned in registration order."""
    def __len__(self) -> int: ...
    def __contains__(self, id: object, /) -> bool: ...

@final
class IdMap:
    """A proxy's (connection, downstream id) <-> upstream id mapping.

    Downstream ids are any ``int`` or ``str``; upstream ids are allocated as by ``Correlator``
    (``1 ..= 2**63 - 1``, wrapping); ``conn`` is an int in ``-2**63 ..= 2**63 - 1``.
    """

    def __new__(cls, *, max_pending: int = 65536, first_id: int = 1) -> Self: ...
    @property
    def max_pending(self) -> int: ...
    def outbound(self, conn: int, id: _Id, /) -> int:
        """Map ``(conn, id)`` to a fresh upstream id."""
    def inbound(self, upstream_id: _Id, /) -> tuple[int, _Id]:
        """Remove and return ``(conn, downstream id)``; ``UnknownIdError`` if unmapped."""
    def discard(self, upstream_id: _Id, /) -> tuple[int, _Id] | None:
        """Remove and return ``(conn, downstream id)``, or ``None``."""
    def upstream(self, conn: int, id: _Id, /) -> int | None:
        """The upstream id of ``(conn, id)``, or ``None``."""
    def hold(self, upstream_id: _Id, /) -> bool:
        """Mark a mapping: an ``AnswerRelay`` holds its answer instead of relaying it."""
    def pending(self, conn: int, /) -> list[tuple[int, _Id]]:
        """``(upstream id, downstream id)`` of each mapping of ``conn``, by upstream id."""
    def drop_connection(self, conn: int, /) -> list[int]:
        """Forget all of ``conn``'s entries; return their upstream ids."""
    def __len__(self) -> int: ...
