"""The client's JSON-RPC batches through `mcpframe proxy URL`: each is answered with one array (JSON-RPC 2.0
§6: the answers to a batch's requests, in any order, in one array; nothing for a batch without requests),
whether it was posted whole (2025-03-26, the one revision with batches) or element by element.

`BatchAnswers` stands between everything that writes to the client and the client: an answer to one of a
batch's requests is held (`session.batch.Batch` collects it) until the last one is in, then the array is
written. A request of the batch the client cancels is not waited for (it gets no answer); one still owed
at the end gets the proxy's error answer, which completes its array like any answer. Lines that answer no
batch go on as they came, and with no batch open `write` is the client's `send` and one test.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from mcpframe import core, jsonrpc
from mcpframe._api import MessageLike
from mcpframe.session.batch import Batch

__all__ = ["BatchAnswers", "answered_id", "duplicate_id_answer", "frames"]


def frames(data: bytes) -> Sequence[MessageLike | core.FrameError]:
    """The messages of NDJSON `data` (a last line without its newline too)."""
    return core.Decoder(lazy=True).feed(data if data.endswith(b"\n") else data + b"\n")


def answered_id(line: bytes) -> Any:
    """The id of the answer that NDJSON `line` is (`None`: something else)."""
    items = frames(line) if line.strip() else ()
    item = items[0] if len(items) == 1 else None
    if item is None or isinstance(item, core.FrameError) or item.kind not in ("result", "error"):
        return None
    return item.id


def duplicate_id_answer(rid: Any) -> bytes:
    """The `-32600` error answer to a batch's request whose id `rid` is already in use (not forwarded: two
    answers to one id could not both be told apart); the stdio proxy's text for a duplicate id."""
    return core.encode_error(rid, jsonrpc.INVALID_REQUEST, f"Invalid Request: id {rid!r} is already in use")


class BatchAnswers:
    """The client's batches waiting for answers, by request id; `write` is how anything reaches the client."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        self.send = send
        self.of: dict[Any, Batch] = {}  # request id -> the batch awaiting its answer
        self._ready: list[bytes] = []  # arrays complete, not written yet

    def open(self, ids: Iterable[Any], errors: Iterable[bytes]) -> None:
        """A batch read: the ids of its requests (their answers awaited) and the error answers to its
        invalid elements. Without requests, its array (errors only) is ready at once (`flush`). The `ids`
        are unique and none is awaited already (the caller answers a duplicate with `duplicate_id_answer`)."""
        batch = Batch(self._ready.append)
        for frame in errors:
            batch.add(frame)
        for rid in ids:
            batch.expect()
            self.of[rid] = batch
        batch.seal()

    def withdraw(self, rid: Any) -> None:
        """The client cancelled request `rid` (or it was dropped unposted): its batch does not wait for it."""
        batch = self.of.pop(rid, None)
        if batch is not None:
            batch.answer(None)

    async def write(self, data: bytes) -> None:
        """Write NDJSON `data` to the client, but answers to a batch's requests, held for its array; then the
        arrays now complete."""
        if self.of:
            data = self._hold(data)
        if data:
            await self.send(data)
        if self._ready:
            await self.flush()

    def _hold(self, data: bytes) -> bytes:
        kept: list[bytes] = []
        for line in data.splitlines(keepends=True):
            rid = answered_id(line)
            batch = None if rid is None else self.of.pop(rid, None)
            if batch is None:
                kept.append(line)
            else:
                batch.answer(line)
        return b"".join(kept)

    async def flush(self) -> None:
        """Write the arrays complete (a cancel or an invalid-only batch can complete one outside `write`)."""
        if self._ready:
            ready, self._ready = self._ready, []
            await self.send(b"".join(ready))
