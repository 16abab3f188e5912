"""The forwarder's byte-level helpers: the upstream's output read through the core's `AnswerRelay`, value
splices (a frame with one or two values replaced, every other byte kept), and a client's id bytes kept for
its answer (`odd_id`, `with_raw_id`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpframe import core

if TYPE_CHECKING:
    from mcpframe._api import MessageLike

__all__ = [
    "Reader",
    "at_offset",
    "decode_held",
    "held_decoder",
    "odd_id",
    "splice",
    "splice_two",
    "with_raw_id",
]

_BOM = b"\xef\xbb\xbf"
_NOTHING: list[core.Message | core.FrameError] = []  # no held frames (read only, never appended to)


def held_decoder(max_frame: int, *, batches: bool = True) -> core.Decoder:
    """A decoder for the frames a relay holds, one whole frame at a time. The LF first settles the
    stream-start BOM question: the relay dropped a real one already. With `batches` off a batch is one
    `-32600` "batches are not supported"."""
    decoder = core.Decoder(max_frame=max_frame, lazy=True, batches=batches)
    decoder.feed(b"\n")
    return decoder


def decode_held(
    decoder: core.Decoder, held: list[tuple[int, bytes] | core.FrameError]
) -> list[core.Message | core.FrameError]:
    """The messages of a relay's held frames, in order (an oversize frame is the relay's `FrameError`). A
    refused frame's `FrameError` gets the frame's offset in the relay's stream (`at_offset`): the held
    decoder's own stream is the held frames alone, each with a CRLF."""
    items: list[core.Message | core.FrameError] = []
    for frame in held:
        if not isinstance(frame, tuple):
            items.append(frame)
            continue
        offset, raw = frame
        if raw[:3] != _BOM:
            start = decoder.offset
            got = decoder.feed(raw + b"\r\n")  # CRLF: a frame's own last CR stays content
        else:  # a second BOM (the relay dropped the frame's own one): content, as a session reads it
            start = len(_BOM)  # `decode` drops the first BOM only, and counts it
            got = core.decode(_BOM + raw, max_frame=decoder.max_frame, lazy=True, batches=decoder.batches)
        for item in got:
            items.append(at_offset(item, offset - start) if type(item) is core.FrameError else item)
    return items


def at_offset(error: core.FrameError, shift: int) -> core.FrameError:
    """`error` moved by `shift` bytes (a cold path: refused frames only); its other fields kept."""
    if not shift:
        return error
    return core.FrameError(
        error.code,
        error.message,
        id=error.id,
        offset=error.offset + shift,
        preview=error.preview,
        batch=error.batch,
        notification=error.notification,
        raw=error.raw,
    )


class Reader:
    """The upstream's output: answers relayed by the core's `AnswerRelay`, the frames it holds decoded."""

    __slots__ = ("_decoder", "relay")

    def __init__(self, ids: core.IdMap, max_frame: int) -> None:
        self.relay = core.AnswerRelay(ids, max_frame=max_frame)
        """The core's relay (`feed` called directly by the thread pump's step, then `decode`)."""
        self._decoder = held_decoder(max_frame)

    def feed(self, chunk: bytes) -> tuple[list[tuple[int, bytes]], list[core.Message | core.FrameError]]:
        relayed, held = self.relay.feed(chunk)
        if not held:  # the common chunk: answers only, nothing to decode (one call less per chunk)
            return relayed, _NOTHING
        return relayed, self.decode(held)

    def close(self) -> tuple[list[tuple[int, bytes]], list[core.Message | core.FrameError]]:
        relayed, held = self.relay.close()
        return relayed, self.decode(held)

    def decode(self, held: list[tuple[int, bytes] | core.FrameError]) -> list[core.Message | core.FrameError]:
        """The messages of the relay's held frames, in order."""
        return decode_held(self._decoder, held) if held else _NOTHING


def splice(raw: bytes, span: tuple[int, int], value: bytes) -> bytes:
    return raw[: span[0]] + value + raw[span[1] :]


def splice_two(raw: bytes, a: tuple[int, int], a_value: bytes, b: tuple[int, int], b_value: bytes) -> bytes:
    """`raw` with two disjoint spans replaced, in either order."""
    if a[0] > b[0]:
        a, a_value, b, b_value = b, b_value, a, a_value
    return b"".join((raw[: a[0]], a_value, raw[a[1] : b[0]], b_value, raw[b[1] :]))


def odd_id(message: MessageLike) -> bytes | None:
    """The bytes of `message`'s id when encoding its value writes others (an escape in a string, `-0`):
    an answer gives the client back the id it wrote, not another spelling of its value. `None` for the
    common id, found by two scans of the frame (no object made)."""
    raw = message.raw
    if b"\\" not in raw and b"-0" not in raw:
        return None
    raw_id = message.raw_id
    if raw_id is None or (raw_id[:2] != b"-0" and b"\\" not in raw_id):
        return None
    return raw_id


def with_raw_id(frame: bytes, raw_id: bytes | None) -> bytes:
    """`frame` (one message, LF-terminated or not) with its top-level id's bytes replaced by `raw_id`
    (`None`: `frame` as it is)."""
    if raw_id is None:
        return frame
    span = core.value_span(frame.rstrip(b"\n"), ("id",))
    assert span is not None  # an answer carries an id
    return splice(frame, span, raw_id)
