"""NDJSON framing: the incremental ``Decoder`` and the one-shot ``decode`` (see ``docs/core-contract.md``).

Reassembly is linear: an incomplete frame is kept as a list of chunks and joined once, when its
terminator arrives. An oversize frame is reported as soon as ``max_frame + 1`` of its bytes are known
and then discarded up to its terminator.
"""

from __future__ import annotations

from mcpframe._pycore.envelope import INVALID_REQUEST, PARSE_ERROR, PREVIEW_BYTES, decode_frame, make_error
from mcpframe._pycore.message import FrameError, Message
from mcpframe.errors import DecoderClosedError

__all__ = ["DEFAULT_MAX_FRAME", "Decoder", "decode"]

DEFAULT_MAX_FRAME = 64 * 1024 * 1024

_BOM = b"\xef\xbb\xbf"
_CR = 13
_BLANK = b" \t\r"
_BODY_BLANK = b" \t\r\n"

Item = Message | FrameError


def _oversize(max_frame: int, offset: int, head: bytes) -> FrameError:
    # Only the first max_frame + 1 bytes are sure to have been seen when it is reported, however the
    # stream was chunked, so the preview never goes further; its bytes were never all held: no raw.
    message = f"Invalid Request: frame exceeds the maximum size of {max_frame} bytes"
    preview = head[: min(max_frame + 1, PREVIEW_BYTES)]
    return FrameError(INVALID_REQUEST, message, offset=offset, preview=preview)


def without_bom(raw: bytes, offset: int, kept_at: int) -> tuple[bytes, int]:
    """A frame of at most ``max_frame`` bytes and its offset, a leading BOM dropped (at the start of any
    frame, as at the stream's: RFC 8259 lets a parser ignore one; it still counts in the frame's size),
    but for the frame at ``kept_at``: the first after a stream-start BOM (one BOM per frame)."""
    if raw.startswith(_BOM) and offset != kept_at:
        return raw[len(_BOM) :], offset + len(_BOM)
    return raw, offset


def _as_bytes(data: object) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"expected bytes, bytearray or memoryview, not {type(data).__name__}")


def _check_options(max_frame: object, lazy: object, batches: object) -> int:
    if not isinstance(max_frame, int) or isinstance(max_frame, bool):
        raise TypeError("max_frame must be an int")
    if not isinstance(lazy, bool) or not isinstance(batches, bool):
        raise TypeError("lazy and batches must be bools")
    if max_frame < 1:
        raise ValueError(f"max_frame must be at least 1, not {max_frame}")
    return max_frame


class Decoder:
    """Incremental NDJSON decoder: ``feed()`` bytes as they arrive, get messages and errors back."""

    __slots__ = (
        "_batches",
        "_bom_end",
        "_bom_head",
        "_closed",
        "_discarding",
        "_frame_start",
        "_lazy",
        "_max_frame",
        "_offset",
        "_pending",
        "_pending_len",
    )

    def __init__(
        self, *, max_frame: int = DEFAULT_MAX_FRAME, lazy: bool = False, batches: bool = True
    ) -> None:
        self._max_frame = _check_options(max_frame, lazy, batches)
        self._lazy = lazy
        self._batches = batches
        self._offset = 0  # stream bytes received so far
        self._bom_head: bytes | None = b""  # stream start while it may still be a BOM; None once decided
        self._bom_end = -1  # 3 once a stream-start BOM was dropped: the first frame keeps a second one
        self._pending: list[bytes] = []  # chunks of the incomplete frame
        self._pending_len = 0
        self._frame_start = 0  # stream offset of the incomplete frame
        self._discarding = False  # inside an oversize frame already reported
        self._closed = False

    @property
    def max_frame(self) -> int:
        """The frame size limit in bytes."""
        return self._max_frame

    @property
    def lazy(self) -> bool:
        """Whether messages build their ``params``/``result`` on first access."""
        return self._lazy

    @property
    def batches(self) -> bool:
        """Whether JSON-RPC batches (top-level arrays) are accepted."""
        return self._batches

    @property
    def offset(self) -> int:
        """Stream bytes received so far, BOM included."""
        return self._offset

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame (at most ``max_frame + 1``)."""
        return self._pending_len + len(self._bom_head or b"")

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def feed(self, data: bytes | bytearray | memoryview, /) -> list[Item]:
        """Take the next bytes of the stream; return everything they complete, in stream order."""
        if self._closed:
            raise DecoderClosedError("decoder is closed")
        chunk = _as_bytes(data)
        start = self._offset
        self._offset += len(chunk)
        out: list[Item] = []
        if self._bom_head is not None:
            chunk, start = self._strip_bom(chunk)
        if chunk:
            self._consume(chunk, start, out)
        return out

    def close(self) -> list[Item]:
        """End the stream: decode a final unterminated frame (as if terminated); no more input."""
        if self._closed:
            raise DecoderClosedError("decoder is closed")
        self._closed = True
        out: list[Item] = []
        if self._bom_head:
            # An incomplete BOM at the end of the stream is content.
            head, self._bom_head = self._bom_head, None
            self._consume(head, 0, out)
        if self._pending:
            frame = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
            self._frame(frame, self._frame_start, out)
        self._discarding = False
        self._bom_head = None
        return out

    def _strip_bom(self, chunk: bytes) -> tuple[bytes, int]:
        head = (self._bom_head or b"") + chunk
        if len(head) < len(_BOM) and _BOM.startswith(head):
            self._bom_head = head
            return b"", 0
        self._bom_head = None
        if head.startswith(_BOM):
            self._bom_end = len(_BOM)
            return head[len(_BOM) :], len(_BOM)
        return head, 0

    def _consume(self, chunk: bytes, start: int, out: list[Item]) -> None:
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        pos = start
        if pieces:
            first = pieces[0]
            if self._discarding:
                self._discarding = False
            elif self._pending:
                self._pending.append(first)
                frame = b"".join(self._pending)
                self._pending = []
                self._pending_len = 0
                self._frame(frame, self._frame_start, out)
            else:
                self._frame(first, pos, out)
            pos = self._frames(pieces, pos + len(first) + 1, out)
        if tail and not self._discarding:
            self._hold(tail, pos, out)

    def _hold(self, tail: bytes, pos: int, out: list[Item]) -> None:
        if not self._pending:
            self._frame_start = pos
        self._pending.append(tail)
        self._pending_len += len(tail)
        size = self._pending_len
        limit = self._max_frame + 1
        # A final CR may still turn out to be half of a CRLF terminator: wait for the next byte.
        if size > limit or (size == limit and tail[-1] != _CR):
            head = b"".join(self._pending)[:PREVIEW_BYTES] if len(self._pending) > 1 else tail
            out.append(_oversize(self._max_frame, self._frame_start, head))
            self._pending = []
            self._pending_len = 0
            self._discarding = True

    def _frames(self, pieces: list[bytes], pos: int, out: list[Item]) -> int:
        """``_frame`` for each of ``pieces[1:]`` (inlined: this is the per-frame hot loop)."""
        max_frame = self._max_frame
        batches = self._batches
        lazy = self._lazy
        for index in range(1, len(pieces)):
            raw = pieces[index]
            offset = pos
            pos += len(raw) + 1
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if len(raw) > max_frame:
                out.append(_oversize(max_frame, offset, raw))
                continue
            if raw and raw[0] == 0xEF:
                raw, offset = without_bom(raw, offset, self._bom_end)
            if raw.strip(_BLANK):
                decode_frame(raw, offset, batches, lazy, out)
        return pos

    def _frame(self, raw: bytes, offset: int, out: list[Item]) -> None:
        if raw[-1:] == b"\r":
            raw = raw[:-1]
        if len(raw) > self._max_frame:
            out.append(_oversize(self._max_frame, offset, raw))
            return
        if raw and raw[0] == 0xEF:  # (tested here first: no call per frame)
            raw, offset = without_bom(raw, offset, self._bom_end)
        if raw.strip(_BLANK):
            decode_frame(raw, offset, self._batches, self._lazy, out)


def decode(
    data: bytes | bytearray | memoryview,
    /,
    *,
    max_frame: int = DEFAULT_MAX_FRAME,
    lazy: bool = False,
    batches: bool = True,
) -> list[Item]:
    """Decode a whole body (an HTTP POST body) as one frame, newlines included.

    >>> decode(b'{"jsonrpc": "2.0", "method": "ping"}')
    [Message(kind='notification', id=None, method='ping')]
    """
    max_frame = _check_options(max_frame, lazy, batches)
    raw = _as_bytes(data)
    start = 0
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
        start = len(_BOM)
    if len(raw) > max_frame:
        return [_oversize(max_frame, start, raw)]
    if not raw.strip(_BODY_BLANK):
        # A body is one message: unlike a line of a stream, it cannot be blank.
        return [make_error(PARSE_ERROR, "Parse error: empty body", raw, start)]
    out: list[Item] = []
    decode_frame(raw, start, batches, lazy, out)
    return out
