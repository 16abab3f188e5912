"""The exception tree shared by both core backends and the layers above.

Invalid input bytes never raise: the decoder turns them into ``FrameError`` values. These exceptions
are for misuse of the API (a duplicate id, an unknown id, a value that cannot be encoded, ...).
The native module imports these very classes, so ``except`` clauses work the same on both backends.
"""

from __future__ import annotations

__all__ = [
    "DecoderClosedError",
    "DuplicateIdError",
    "EncodeError",
    "MCPFrameError",
    "PendingLimitError",
    "UnknownIdError",
]


class MCPFrameError(Exception):
    """Base class of every exception mcpframe raises on purpose."""


class DuplicateIdError(MCPFrameError, ValueError):
    """A request id is already in flight."""


class UnknownIdError(MCPFrameError, KeyError):
    """No request is in flight with this id."""

    def __str__(self) -> str:
        # KeyError quotes its argument; keep the message readable.
        return str(self.args[0]) if self.args else ""


class PendingLimitError(MCPFrameError, RuntimeError):
    """Too many requests are in flight."""


class DecoderClosedError(MCPFrameError, RuntimeError):
    """``feed()`` or ``close()`` was called on a closed decoder."""


class EncodeError(MCPFrameError, TypeError):
    """A value cannot be encoded as JSON."""
