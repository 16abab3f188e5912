"""Answering a JSON-RPC batch: the responses to its elements go back together, as one array."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Batch"]


class Batch:
    """Collects the response frames of one incoming batch and writes them once all are in."""

    __slots__ = ("_frames", "_sealed", "_waiting", "_write")

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write
        self._frames: list[bytes] = []
        self._waiting = 0
        self._sealed = False

    def expect(self) -> None:
        """A request of the batch is being handled; its answer (or ``skip``) will follow."""
        self._waiting += 1

    def add(self, frame: bytes) -> None:
        """An answer that was not announced by ``expect`` (e.g. for an invalid element)."""
        self._frames.append(frame)

    def answer(self, frame: bytes | None) -> None:
        """The answer to an expected request; ``None`` when it gets none (cancelled)."""
        self._waiting -= 1
        if frame is not None:
            self._frames.append(frame)
        self._maybe_flush()

    def seal(self) -> None:
        """Every element of the batch has been dispatched."""
        self._sealed = True
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if not self._sealed or self._waiting or not self._frames:
            return
        frames, self._frames = self._frames, []
        body = b",".join(frame.rstrip(b"\n") for frame in frames)
        self._write(b"[" + body + b"]\n")
