"""JSON-RPC batches on the incoming side: which batch an element belongs to, and answering it as one array.

The decoder marks each element of a batch with its index (``item.batch``); ``Intake`` adds a ``SEAL`` after
the last one. ``Batches`` turns that into answers: a batch's first element opens a ``Batch`` that collects
the response frames of its elements and writes them as one array once all are in, or, with batches off,
refuses the batch with one ``-32600`` error (``id: null``) and its elements are skipped. One batch at a time
is open, since the elements of a batch are handled in order as a unit.

A batch's answer is one frame, held until its last element is answered, and each element may be a request
whose answer is far longer than itself (a tool returning megabytes): once the answers held pass the frame
limit (the Session's ``max_frame``, at least ``core.DEFAULT_MAX_FRAME``: an HTTP lane's ``max_frame`` is the
request body's limit, which is not meant for answers), its elements not yet started are answered ``-32603``
"Batch too large: ..." (``too_large``) instead of run, so memory stays bounded (by that limit plus the
answers of the handlers already running). An answer of a handler already running that would still take the
array past the limit is replaced by that error with its id (``too_large_answer``, as the stdio proxy's
``Batch`` does), so the array stays a frame its peer takes.

Besides it, one batch may be answered at once as *busy* (``Batches.answer_busy``): one that starts while
the Session's backlog is at its cap and reading goes on for the peer's answers. Its requests get ``-32603
"Server busy"``, its answers to our own requests are resolved, its notifications are dropped.

``Stub`` keeps the place of an element already dealt with (a cancelled request, an answer resolved ahead of
the backlog), so its batch keeps its shape; ``SEAL`` marks a batch's end in the sequence of items.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Final, Literal

from mcpframe import core, jsonrpc
from mcpframe.session.rejections import RejectionLog

__all__ = [
    "BATCH_REFUSAL",
    "EMPTY_BATCH",
    "LONG_INTEGER",
    "REFUSED",
    "SEAL",
    "Batch",
    "Batches",
    "Seal",
    "Stub",
    "error_answer",
    "invalid_request_data",
    "too_large",
    "too_large_answer",
]

BATCH_REFUSAL: Final = "Invalid Request: batches are not supported"
EMPTY_BATCH: Final = "Invalid Request: empty batch"
"""The core's refusal of ``[]``: a batch too, refused as one while batches are off (``Intake``)."""
LONG_INTEGER: Final = f"Invalid Request: integer literal longer than {core.MAX_INT_DIGITS} digits"
"""The core's refusal of a frame with an integer literal past its digit limit."""
_BUSY: Final = (
    "Server busy: too many requests waiting while this session waits for the peer's answers; retry later"
)


def error_answer(error: core.FrameError, *, max_frame: int | None = None) -> bytes:
    """The response line to a rejected frame: a parse error's says where (``jsonrpc.parse_error_data``),
    since the peer cannot tell which of its lines was bad otherwise, an invalid request's where its frame
    starts (``invalid_request_data``), and a parse error's carries the request's id when it
    can be read from the broken frame (``jsonrpc.recover_id``), so the request waiting for it ends now. A
    frame over the size limit's says where it starts and the limit, with the id its first bytes show.

    ``max_frame`` is the limit of the decoder that produced ``error``, where it may be a whole frame over
    it; batch elements never are (the limit is the whole frame's)."""
    if max_frame is not None and _oversize(error):
        return _oversize_answer(error, max_frame)
    if error.code != jsonrpc.PARSE_ERROR:
        data = invalid_request_data(error)
        return (
            error.to_response()
            if data is None
            else core.encode_error(error.id, error.code, error.message, data)
        )
    data = jsonrpc.parse_error_data(error.raw, error.offset)
    rid = error.id if error.id is not None else jsonrpc.recover_id(error.raw)
    return core.encode_error(rid, error.code, error.message, data)


def invalid_request_data(error: core.FrameError) -> dict[str, int | str] | None:
    """The ``data`` of the answer to a frame refused as an invalid request (a float id, a method that is
    not a string, both a result and an error, an integer literal past the core's digit limit, ...): where
    the frame starts in its stream (``offset``; in a batch, where its element starts), as a parse error's
    says (the stdlib reads such a frame, so there is no ``at`` to add); ``None`` for any other refusal.
    The offset is the core's own (``FrameError.offset``, the same on both backends), read only here. A
    batch refused whole (``BATCH_REFUSAL``) says nothing more, as a session's own refusal of a batch,
    which meets only its elements, does not."""
    if error.code != jsonrpc.INVALID_REQUEST or error.message == BATCH_REFUSAL:
        return None
    return {"offset": error.offset}


def _oversize(error: core.FrameError) -> bool:
    """Whether ``error`` is the core's for a frame over its decoder's ``max_frame``: the one ``-32600``
    whose bytes were never held (docs/core-contract.md, ``FrameError.raw``)."""
    return error.code == jsonrpc.INVALID_REQUEST and error.raw is None and error.batch is None


def _oversize_answer(error: core.FrameError, limit: int) -> bytes:
    """A frame over the size limit: its ``data`` says where it starts (``offset``) and the limit
    (``limit``, in bytes; its own size is not known, as it is refused once ``limit + 1`` of its bytes are
    seen and then skipped), and it carries the request's id when its first bytes show it (``preview``)."""
    data = {"offset": error.offset, "limit": limit}
    rid = error.id if error.id is not None else jsonrpc.recover_id(error.preview)
    return core.encode_error(rid, error.code, error.message, data)


def too_large(limit: int) -> str:
    """The error message for a batch element not run because the batch's answer already holds ``limit``
    bytes (module doc)."""
    return f"Batch too large: its answers exceed {limit} bytes; send this request in a smaller batch"


def too_large_answer(answer: bytes, limit: int) -> bytes:
    """The ``-32603`` "Batch too large" error (``too_large(limit)``, LF-terminated) standing for response
    frame ``answer`` in a batch's array it would take past ``limit`` bytes: the same id, its bytes exactly
    as written (``null`` when none can be read)."""
    error = core.encode_error(None, jsonrpc.INTERNAL_ERROR, too_large(limit))
    frame = answer.rstrip(b"\n")
    span = core.value_span(frame, ("id",))
    if span is None:
        return error
    null = core.value_span(error[:-1], ("id",))
    assert null is not None  # encode_error writes an id
    return error[: null[0]] + frame[span[0] : span[1]] + error[null[1] :]


class Batch:
    """Collects the response frames of one incoming batch and writes them once all are in.

    ``held`` counts their bytes (each with its LF: the array is ``held + 1`` bytes, its LF left out): the
    answer is one frame, kept whole until its last element is answered, so the Session stops running a
    batch's elements once it passes the frame limit (``Intake``), and an answer that would take it past
    ``limit`` anyway (its handler was running) is replaced by its ``too_large_answer`` (``None``: no
    limit).

    What is guaranteed: an answer is kept whole only if the array, with it and with the
    ``too_large_answer`` of every request still awaited (``expect(rid)`` says its id), stays within
    ``limit`` bytes. So the array passes ``limit`` only when the frames already held plus the
    ``too_large_answer`` of the requests awaited do not fit by themselves (a request is always answered),
    or through frames ``add`` appends, which are not checked."""

    __slots__ = (
        "_frames",
        "_reserved",
        "_sealed",
        "_waiting",
        "_write",
        "held",
        "limit",
        "overflowed",
        "replaced",
    )

    def __init__(self, write: Callable[[bytes], None], limit: int | None = None) -> None:
        self._write = write
        self.limit = limit
        self._frames: list[bytes] = []
        self._waiting = 0
        self._sealed = False
        self._reserved = 0  # the bytes of the ``too_large_answer`` of every request awaited (``expect``)
        self.held = 0
        self.overflowed = False
        self.replaced = (
            False  # an answer was replaced: the array is full, its elements not started are not run
        )

    def expect(self, rid: Any = None) -> None:
        """A request of the batch is being handled; its answer (or ``None``) will follow. ``rid``: its id,
        whose ``too_large_answer`` the answers that come first leave room for (with a limit)."""
        self._waiting += 1
        if self.limit is not None:
            self._reserved += len(core.encode_error(rid, jsonrpc.INTERNAL_ERROR, too_large(self.limit)))

    def add(self, frame: bytes) -> None:
        """An answer that was not announced by ``expect`` (e.g. for an invalid element)."""
        self._frames.append(frame)
        self.held += len(frame)

    def answer(self, frame: bytes | None) -> None:
        """The answer to an expected request; ``None`` when it gets none (cancelled)."""
        self._waiting -= 1
        if self.limit is not None:
            message = too_large(self.limit)
            replacement = (
                too_large_answer(frame, self.limit)
                if frame is not None
                else core.encode_error(None, jsonrpc.INTERNAL_ERROR, message)  # no longer than its own
            )
            # its room is no longer kept (none once nothing else is awaited)
            self._reserved = max(0, self._reserved - len(replacement)) if self._waiting else 0
            if frame is not None:
                whole = frame if frame.endswith(b"\n") else frame + b"\n"
                if self.held + len(whole) + self._reserved + 1 > self.limit:
                    whole = replacement
                    self.replaced = True
                frame = whole
        if frame is not None:
            self._frames.append(frame)
            self.held += len(frame)
        self._maybe_flush()

    def seal(self) -> None:
        """Every element of the batch has been dispatched."""
        self._sealed = True
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if not self._sealed or self._waiting or not self._frames:
            return
        frames, self._frames = self._frames, []
        self.held = 0
        body = b",".join(frame.rstrip(b"\n") for frame in frames)
        self._write(b"[" + body + b"]\n")


class Seal:
    """Marks the end of a batch in the item sequence (its elements are all handled: answer it)."""

    __slots__ = ()
    kind = "seal"
    batch = None


SEAL: Final = Seal()


class Stub:
    """Stands in the backlog for an element of a batch already dealt with (a cancelled request, a response
    resolved ahead of the backlog): it keeps the batch's shape and runs nothing."""

    __slots__ = ("batch", "offset")
    kind = "stub"

    def __init__(self, item: Any) -> None:
        self.batch = item.batch
        self.offset = item.offset


class _Refused(enum.Enum):
    REFUSED = "refused"


REFUSED: Final = _Refused.REFUSED
"""What ``Batches.of`` returns for an element of a refused batch: skip it (the batch got one error)."""

BatchOf = Batch | Literal[_Refused.REFUSED] | None


class Batches:
    """The batch state of one Session's input (module doc). ``enabled`` is read at each batch's start."""

    __slots__ = ("_busy", "_current", "_limit", "_rejections", "_write", "enabled")

    def __init__(
        self,
        write: Callable[[bytes], None],
        *,
        enabled: bool,
        rejections: RejectionLog | None = None,
        limit: int | None = None,
    ) -> None:
        self._write = write
        self._limit = limit  # of each batch's array (``Batch``)
        self._rejections = rejections or RejectionLog()  # its warnings, rate-limited
        self.enabled = enabled
        self._current: BatchOf = None  # the batch being handled
        self._busy: BatchOf = None  # the batch being answered at once as busy

    def _open(self) -> Batch | Literal[_Refused.REFUSED]:
        if self.enabled:
            return Batch(self._write, self._limit)
        self._write(core.encode_error(None, jsonrpc.INVALID_REQUEST, BATCH_REFUSAL))
        return REFUSED

    def refused_empty(self, error: core.FrameError) -> bool:
        """Whether ``error`` is the core's refusal of ``[]`` while batches are off: then it is refused
        as any batch is (logged, one ``BATCH_REFUSAL`` answer), as a decoder without batches says."""
        if self.enabled or error.message != EMPTY_BATCH:
            return False
        self._rejections.batch(error.offset, BATCH_REFUSAL)
        self._open()
        return True

    def of(self, item: Any) -> BatchOf:
        """The batch ``item`` belongs to (``None`` outside one); its first element opens it, or refuses it."""
        index = item.batch
        if index is None:
            return None
        if index == 0:
            if not self.enabled:
                self._rejections.batch(item.offset, BATCH_REFUSAL)
            self._current = self._open()
        return self._current

    def seal(self) -> None:
        """The batch being handled has ended: answer it once its requests are answered."""
        batch, self._current = self._current, None
        if isinstance(batch, Batch):
            batch.seal()

    @property
    def busy(self) -> bool:
        """Whether a batch is being answered at once as busy (its elements go to ``answer_busy``)."""
        return self._busy is not None

    def answer_busy(self, item: Any, resolve: Callable[[Any], None]) -> None:
        """Answer ``item``, an element (or the ``SEAL``) of a batch refused whole as busy (module doc);
        ``resolve`` takes the peer's answers to our own requests."""
        if self._busy is None:  # its first element
            self._busy = self._open()
        busy = self._busy
        if item is SEAL:
            self._busy = None
            if isinstance(busy, Batch):
                busy.seal()
        elif not isinstance(item, core.FrameError) and item.kind in ("result", "error"):
            resolve(item)
        elif busy is REFUSED or busy is None:
            return
        elif isinstance(item, core.FrameError):
            if not item.notification:
                busy.add(error_answer(item))
        elif item.kind == "request":
            self._rejections.refusal(
                item.offset, f"refused request {item.method!r} (id {item.id!r}) of a batch: {_BUSY}"
            )
            busy.expect()
            busy.answer(core.encode_error(item.id, jsonrpc.INTERNAL_ERROR, _BUSY))
        else:
            text = "dropped notification %r: its batch came while the session was busy"
            self._rejections.refusal(item.offset, text, item.method)

    def clear(self) -> None:
        """The session is over: forget the open batches."""
        self._current = self._busy = None
