"""``Relay``: a client session's bytes towards a proxy's upstream, plain frames relayed in one go.

The reference of the native relay (``src/relay.rs``): the framing is the ``Decoder``'s own (this class
reuses it and only replaces what happens to each complete frame); each frame is validated as the
decoder would, and a plain request gets its upstream id from the shared ``IdMap`` spliced in
(``Message.with_id``), a plain notification goes as it is. From the first frame that needs the proxy's
decision on, every frame of the chunk is held: handed back whole, in order, with its stream offset.
"""

from __future__ import annotations

from mcpframe._pycore.correlation import IdMap, _conn
from mcpframe._pycore.envelope import decode_frame
from mcpframe._pycore.framing import _BLANK, DEFAULT_MAX_FRAME, Decoder, _oversize, without_bom
from mcpframe._pycore.message import FrameError, Message
from mcpframe.errors import DecoderClosedError, DuplicateIdError, PendingLimitError
from mcpframe.protocol import (
    INITIALIZE,
    NOTIFICATIONS_CANCELLED,
    NOTIFICATIONS_INITIALIZED,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
)

__all__ = ["AnswerRelay", "Relay"]

_WATCHED_REQUESTS = frozenset({INITIALIZE, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE})
_WATCHED_NOTIFICATIONS = frozenset({NOTIFICATIONS_CANCELLED, NOTIFICATIONS_INITIALIZED})
_TOKEN = b'"progressToken"'

Held = tuple[int, bytes] | FrameError
"""A held frame: ``(stream offset of its first byte, its bytes)``; or the oversize report."""


class _Framer(Decoder):
    """The ``Decoder``'s framing, handing each complete frame's bytes to the relay instead."""

    __slots__ = ("relay",)

    def __init__(self, relay: Relay | AnswerRelay, max_frame: int) -> None:
        super().__init__(max_frame=max_frame, lazy=True)
        self.relay = relay

    def _frames(self, pieces: list[bytes], pos: int, out: list[Message | FrameError]) -> int:
        for index in range(1, len(pieces)):
            raw = pieces[index]
            self._frame(raw, pos, out)
            pos += len(raw) + 1
        return pos

    def _frame(self, raw: bytes, offset: int, out: list[Message | FrameError]) -> None:
        if raw[-1:] == b"\r":
            raw = raw[:-1]
        if len(raw) > self._max_frame:
            self.relay._held.append(_oversize(self._max_frame, offset, raw))
            return
        if raw and raw[0] == 0xEF:  # (tested here first: no call per frame)
            raw, offset = without_bom(raw, offset, self._bom_end)
        if raw.strip(_BLANK):
            self.relay._step(raw, offset)


class Relay:
    """Relay one client session's bytes towards the upstream (see ``docs/core-contract.md``)."""

    __slots__ = ("_closed", "_conn", "_framer", "_held", "_idmap", "_out", "_requests")

    def __init__(self, idmap: IdMap, conn: int, *, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        if not isinstance(idmap, IdMap):
            raise TypeError(f"idmap must be an IdMap, not {type(idmap).__name__}")
        self._conn = _conn(conn)
        self._idmap = idmap
        self._framer = _Framer(self, max_frame)
        self._out: list[bytes] = []
        self._held: list[Held] = []
        self._requests = 0
        self._closed = False

    @property
    def conn(self) -> int:
        """The session's connection number in the ``IdMap``."""
        return self._conn

    @property
    def max_frame(self) -> int:
        """The frame size limit in bytes."""
        return self._framer.max_frame

    @property
    def requests(self) -> int:
        """Requests relayed so far (each mapped in the ``IdMap``)."""
        return self._requests

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def feed(self, chunk: bytes | bytearray | memoryview, /) -> tuple[bytes, list[Held]]:
        """Relay what ``chunk`` completes: ``(relayed bytes, held frames)``."""
        if self._closed:
            raise DecoderClosedError("relay is closed")
        return self._collect(self._framer.feed(chunk))

    def close(self) -> tuple[bytes, list[Held]]:
        """End the stream: an unterminated last frame is relayed or held as if terminated."""
        if self._closed:
            raise DecoderClosedError("relay is closed")
        self._closed = True
        return self._collect(self._framer.close())

    def _collect(self, tail: list[Message | FrameError]) -> tuple[bytes, list[Held]]:
        # What the framer itself returns is the oversize report of a chunk's unterminated tail
        # (`_hold`): it comes after every frame of the chunk.
        out, held = b"".join(self._out), self._held
        held.extend(item for item in tail if isinstance(item, FrameError))
        self._out, self._held = [], []
        return out, held

    def _step(self, raw: bytes, offset: int) -> None:
        if not self._held:
            frame = self._relay(raw)
            if frame is not None:
                self._out.append(frame)
                return
        self._held.append((offset, raw))

    def _relay(self, raw: bytes) -> bytes | None:
        """The frame to send upstream (LF included), or None: it needs a decision."""
        items: list[Message | FrameError] = []
        decode_frame(raw, 0, True, True, items)
        message = items[0] if len(items) == 1 else None
        if not isinstance(message, Message) or not _relayable(message):
            return None
        if message.kind == "notification":
            return raw + b"\n"
        raw_id = message.raw_id
        if raw_id is None or raw_id[:2] == b"-0" or b"\\" in raw_id:
            return None  # written unlike its encoding: the proxy keeps its bytes, for its answer
        try:
            upstream = self._idmap.outbound(self._conn, message.id)  # type: ignore[arg-type]
        except (DuplicateIdError, PendingLimitError):
            return None  # the proxy answers it
        self._requests += 1
        return message.with_id(upstream) + b"\n"


def _relayable(message: Message) -> bool:
    """A request or notification outside a batch, of no watched method, (a request) with no progress
    token in its params: it goes through without a decision."""
    if message.batch is not None:
        return False
    if message.kind == "notification":
        return message.method not in _WATCHED_NOTIFICATIONS
    if message.kind != "request" or message.method in _WATCHED_REQUESTS:
        return False
    params = message.raw_params
    return params is None or _TOKEN not in params


class AnswerRelay:
    """Relay the upstream's answers to the client sessions (see ``docs/core-contract.md``)."""

    __slots__ = ("_closed", "_framer", "_held", "_idmap", "_out")

    def __init__(self, idmap: IdMap, *, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        if not isinstance(idmap, IdMap):
            raise TypeError(f"idmap must be an IdMap, not {type(idmap).__name__}")
        self._idmap = idmap
        self._framer = _Framer(self, max_frame)
        self._out: dict[int, list[bytes]] = {}
        self._held: list[Held] = []
        self._closed = False

    @property
    def max_frame(self) -> int:
        """The frame size limit in bytes."""
        return self._framer.max_frame

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def feed(self, chunk: bytes | bytearray | memoryview, /) -> tuple[list[tuple[int, bytes]], list[Held]]:
        """Relay what ``chunk`` completes: ``([(conn, relayed bytes), ...], held frames)``."""
        if self._closed:
            raise DecoderClosedError("relay is closed")
        return self._collect(self._framer.feed(chunk))

    def close(self) -> tuple[list[tuple[int, bytes]], list[Held]]:
        """End the stream: an unterminated last frame is relayed or held as if terminated."""
        if self._closed:
            raise DecoderClosedError("relay is closed")
        self._closed = True
        return self._collect(self._framer.close())

    def _collect(self, tail: list[Message | FrameError]) -> tuple[list[tuple[int, bytes]], list[Held]]:
        out = [(conn, b"".join(frames)) for conn, frames in self._out.items()]
        held = self._held
        held.extend(item for item in tail if isinstance(item, FrameError))
        self._out, self._held = {}, []
        return out, held

    def _step(self, raw: bytes, offset: int) -> None:
        if not self._held and self._answer(raw):
            return
        self._held.append((offset, raw))

    def _answer(self, raw: bytes) -> bool:
        items: list[Message | FrameError] = []
        decode_frame(raw, 0, True, True, items)
        message = items[0] if len(items) == 1 else None
        if not isinstance(message, Message) or message.batch is not None:
            return False
        upstream = message.id
        if (
            message.kind not in {"result", "error"}
            or type(upstream) is not int
            or not -(2**63) <= upstream < 2**63
        ):
            return False
        idmap = self._idmap
        if upstream in idmap._held:
            return False  # the proxy follows this request: it takes the answer
        found = idmap.discard(upstream)
        if found is None:
            return False
        conn, id = found
        self._out.setdefault(conn, []).append(message.with_id(id) + b"\n")
        return True
