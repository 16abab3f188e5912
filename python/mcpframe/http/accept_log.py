"""One log record a minute for a listener out of file descriptors, not one per accept() attempt.

When the process has no descriptor left (EMFILE, ENFILE: more connections open than `ulimit -n`), asyncio's
accept loop logs every failed `accept()` at ERROR with its traceback, and on Python 3.11 it goes on trying
for the rest of its backlog (uvicorn's: 2,048) before it pauses the listener for a second: thousands of
tracebacks a second (23 MB of stderr in a few seconds measured, and most of a core spent formatting them)
while the server is already short of resources. `quiet_accept_failures()` puts a filter on the `asyncio`
logger that lets the first such record through, then one a minute saying how many were left out; every
other asyncio record passes untouched. The listener itself is asyncio's: it serves again once descriptors
are free.
"""

from __future__ import annotations

import logging
import time

__all__ = ["AcceptFailures", "quiet_accept_failures"]

_MESSAGE = "socket.accept() out of system resource"  # asyncio's selector_events, its first line


class AcceptFailures(logging.Filter):
    """Passes asyncio's "out of system resource" accept records at most once per `every` seconds."""

    def __init__(self, every: float = 60.0) -> None:
        super().__init__()
        self.every = every
        self._next = float("-inf")
        self._left_out = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str) or not record.msg.startswith(_MESSAGE):
            return True
        now = time.monotonic()
        if now < self._next:
            self._left_out += 1
            return False
        self._next = now + self.every
        if self._left_out:
            note = f" ({self._left_out} more since the last such record left out)"
            record.msg = _MESSAGE + note + record.msg[len(_MESSAGE) :]
            self._left_out = 0
        return True


def quiet_accept_failures() -> None:
    """Install `AcceptFailures` on the `asyncio` logger, once per process."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, AcceptFailures) for f in logger.filters):
        logger.addFilter(AcceptFailures())
