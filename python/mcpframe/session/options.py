"""``SessionOptions``: the Session's tuning knobs, one typed, frozen value instead of loose keywords.

One value can be built once and handed to many Sessions (a server makes one per connection, the HTTP host
one per lane), and a field that does not exist is a ``TypeError`` where the options are written, not deep
inside whatever forwards them. The bounds the core enforces itself (``max_pending``, ``max_frame``) are
checked by the core when the Session builds its ``Correlator`` and ``Decoder``, so their messages are the
core's; the ones only the Session uses are checked here.
"""

from __future__ import annotations

import dataclasses

from mcpframe import core
from mcpframe.session.outbox import HIGH_WATER

__all__ = ["SessionOptions"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions:
    """How much a Session takes on at once, and how long it waits (``docs/session-api.md``)."""

    max_in_flight: int = 1024
    """Request handlers running at once; past it what was read waits and reading stops (flow control).
    The notification jobs waiting for their worker are bounded by the same number."""

    max_pending: int = 65536
    """Our own requests waiting for the peer's answer; past it ``request`` raises ``PendingLimitError``."""

    max_frame: int = core.DEFAULT_MAX_FRAME
    """Longest incoming frame in bytes; a longer one is rejected as it arrives, the frames after it kept."""

    outbox_high_water: int = HIGH_WATER
    """Bytes of answers the transport has not taken before reading stops (resumes at a quarter of it)."""

    max_answer_bytes: int = 16 * 1024 * 1024
    """Bytes of answers the running handlers may be about to add, each counted as the largest frame of the
    last 10 s: no further handler starts past it (reading stops; one always may), so a slow reader of large
    answers slows the server down instead of growing its memory by ``max_in_flight`` answers."""

    timeout: float | None = None
    """Seconds ``request`` waits for an answer or progress when the call gives no ``timeout``; ``None``:
    no limit. For a bare Session only: a ``Client`` passes its own ``timeout`` with every request and
    refuses this field (its knob is ``Client(timeout=...)``)."""

    drain_timeout: float = 5.0
    """Seconds the end of a session may take: at EOF, for running handlers to answer and queued
    notifications to be delivered; on ``aclose``, for what was already sent to be written."""

    def __post_init__(self) -> None:
        if self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {self.max_in_flight}")
        if self.outbox_high_water < 1:
            raise ValueError(f"outbox_high_water must be at least 1 byte, got {self.outbox_high_water}")
        if self.max_answer_bytes < 1:
            raise ValueError(f"max_answer_bytes must be at least 1 byte, got {self.max_answer_bytes}")
        if self.drain_timeout < 0:
            raise ValueError(f"drain_timeout must not be negative, got {self.drain_timeout}")
        if self.timeout is not None and self.timeout < 0:
            raise ValueError(f"timeout must be None or not negative, got {self.timeout}")
