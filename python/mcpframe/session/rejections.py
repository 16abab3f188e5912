"""The warnings about rejected frames, rate-limited: a flood of bad input must not become a flood of log.

Each rejected frame (and each batch refused while batches are off) is worth a warning, but the log goes to
stderr by default, and a parent that pipes the server's stderr and never reads it fills the pipe: the next
write blocks the event loop, and the server stops answering on stdout (about 320 bad lines did it). So a
Session logs the first ``BURST`` rejections in full, then counts the rest and logs one summary line per
``INTERVAL`` seconds at most (with the last one's place and reason), and once more when its input ends or
it closes. After a quiet ``INTERVAL`` (no rejection at all) the next ones are logged in full again. The
answers to the peer are not affected: every rejected frame is still answered as before.

The frames refused or dropped for want of room (a request answered "Server busy", a notification dropped
while the session waits for the peer's answers or in a batch answered as busy) are just as easy for a peer
to send by the thousand, so they are counted with the rejections (``RejectionLog.refusal``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Final

from mcpframe import jsonrpc

__all__ = ["BURST", "INTERVAL", "RejectionLog", "log_frame_error"]

logger = logging.getLogger("mcpframe.session")

BURST: Final = 20
"""Rejections logged in full before they are counted instead."""
INTERVAL: Final = 60.0
"""Seconds between two summary lines, and the quiet time after which rejections are logged in full again."""


def log_frame_error(error: Any) -> None:
    """Log what was rejected and where (stderr by default), and its id when the core read one (a response
    is never answered, so the log is all that names it); the peer gets only the JSON-RPC error. A line
    that does not even start like JSON is most often a `print()` to the stdout that carries the protocol:
    the log says so."""
    preview = error.preview
    rid = "" if error.id is None else f", id {error.id!r}"
    hint = ""
    if error.code == jsonrpc.PARSE_ERROR and isinstance(preview, bytes) and preview.lstrip()[:1] not in b"{[":
        hint = (
            " (not JSON at all: does the other side print() to the stdout that carries the protocol?"
            " log to stderr)"
        )
    logger.warning(
        "rejected frame at stream byte %d: %s (code %d%s); starts with %r%s",
        error.offset,
        error.message,
        error.code,
        rid,
        preview,
        hint,
    )


class RejectionLog:
    """One Session's rejection warnings (module doc). ``clock`` gives seconds (monotonic)."""

    __slots__ = ("_clock", "_last", "_last_at", "_logged", "_since", "_suppressed")

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._logged = 0  # logged in full since the last quiet interval (BURST + 1: counting)
        self._suppressed = 0  # counted since the last summary
        self._since = 0.0  # when the counting (or the last summary) began
        self._last: float | None = None  # when the last rejection came
        # the last one counted: its offset, and its message with the arguments it is formatted with (when due)
        self._last_at: tuple[int, str, tuple[object, ...]] = (0, "", ())

    def frame(self, error: Any) -> None:
        """A rejected frame (a ``core.FrameError``)."""
        if self._admit(error.offset, error.message):
            log_frame_error(error)

    def batch(self, offset: int, message: str) -> None:
        """A batch refused as a whole (batches are off)."""
        if self._admit(offset, message):
            logger.warning("refused a batch at stream byte %d: %s", offset, message)

    def refusal(self, offset: int, text: str, *args: object) -> None:
        """A frame refused or dropped for want of room (module doc); ``text % args`` says which and why,
        formatted only when a line is written (a flood of them pays no formatting per frame)."""
        if self._admit(offset, text, args):
            logger.warning(text, *args)

    def flush(self) -> None:
        """Log the count of the rejections not logged yet, if any (the input ended, the Session closes)."""
        if self._suppressed:
            offset, message, args = self._last_at
            if args:
                message %= args
            logger.warning(
                "%d more rejected frames suppressed in the last %.0f s (the last at stream byte %d: %s)",
                self._suppressed,
                max(self._clock() - self._since, 0.0),
                offset,
                message,
            )
            self._suppressed = 0
            self._since = self._clock()

    def _admit(self, offset: int, message: str, args: tuple[object, ...] = ()) -> bool:
        """Whether this rejection is logged in full; if not it is counted (and the count logged when due)."""
        now = self._clock()
        if self._last is not None and now - self._last >= INTERVAL:  # quiet: log in full again
            self.flush()
            self._logged = 0
        self._last = now
        if self._logged < BURST:
            self._logged += 1
            return True
        if self._logged == BURST:  # the counting begins
            self._logged += 1
            self._since = now
        self._suppressed += 1
        self._last_at = (offset, message, args)
        if now - self._since >= INTERVAL:
            self.flush()
        return False
