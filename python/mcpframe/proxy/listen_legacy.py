"""The legacy HTTP+SSE transport (2024-11-05) of the listening proxy: a child per `GET /sse` stream.

The host's `LegacySSE` serves the routes unchanged (the `endpoint` event, session ids, POST `/messages/`,
its bounded queues both ways, the end of the session with its stream); `LegacyBridge` stands where its
`ServerConnection` stands. Its `run` spawns the stream's child, writes what the client POSTs to the child's
stdin and the child's frames to the stream, as bytes. Both ways are bounded: a POST waits for room in the
inbound queue, the child's reader waits for room in the stream's queue (a slow client slows the child).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import Id

from .pool import ChildPool, PoolBusy
from .unreadable import answer_id, dropped_answer

if TYPE_CHECKING:
    from mcpframe.http.legacy_pipe import LegacyTransport
    from mcpframe.session import Session

    from .pool import Child

__all__ = ["LegacyBridge"]

logger = logging.getLogger("mcpframe.proxy")


class LegacyBridge:
    """The `ServerConnection` stand-in of one legacy SSE session of the proxy."""

    def __init__(self, pool: ChildPool, *, max_frame: int) -> None:
        self.pool = pool
        self.max_frame = max_frame
        self.version: str | None = None  # from the child's initialize answer: the host allows batches by it
        self.pending: set[Id] = set()
        self._init_id: Id | None = None

    async def handle_request(self, request: Any) -> Any:  # pragma: no cover - the child answers
        raise RuntimeError("the proxy forwards requests to its upstream")

    async def handle_notification(self, notification: Any) -> None:  # pragma: no cover - the child reads them
        return None

    async def run(self, session: Session) -> None:
        """Spawn the child and carry frames both ways until the child, or the client's stream, ends."""
        transport: LegacyTransport = session.transport  # type: ignore[assignment]
        try:
            child = await self.pool.spawn()
        except (PoolBusy, OSError) as exc:
            logger.warning("legacy SSE session refused: %s", exc)
            await transport.aclose()
            return
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._inbound, transport, child)
                await self._outbound(transport, child)
                tg.cancel_scope.cancel()
            status = await child.close()
            why = f"the upstream server exited (status {status}) before answering request"
            for rid in sorted(self.pending, key=str):
                text = f"{why} {rid!r}; open a new SSE session"
                await transport.send(core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, text))
        finally:
            await child.close()
            await transport.aclose()

    async def _inbound(self, transport: LegacyTransport, child: Child) -> None:
        """POSTed frames to the child (their requests noted, to be failed if the child dies)."""
        decoder = core.Decoder(max_frame=self.max_frame, lazy=True)
        while True:
            chunk = await transport.receive()
            if not chunk:
                break
            for item in decoder.feed(chunk):
                if not isinstance(item, core.FrameError) and item.kind == "request" and item.id is not None:
                    self.pending.add(item.id)
                    if item.method == protocol.INITIALIZE:
                        self._init_id = item.id
            try:
                await child.write(chunk)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                break
        await child.close()  # the client's stream ended: the child ends with it

    async def _outbound(self, transport: LegacyTransport, child: Child) -> None:
        """The child's frames as SSE events (waits while the client's stream is full)."""
        async for item in child.frames(max_frame=self.max_frame):
            if isinstance(item, core.FrameError):
                logger.warning("dropping a malformed frame from the upstream server: %s", item.message)
                rid = answer_id(item.preview)  # an answer's head shows its id: its request ends now
                if rid is not None and rid in self.pending:
                    self.pending.discard(rid)
                    await transport.send(dropped_answer(rid, item))
                continue
            if item.kind in ("result", "error") and item.id is not None:
                self.pending.discard(item.id)
                if item.id == self._init_id and isinstance(item.result, dict):
                    version = item.result.get("protocolVersion")
                    self.version = version if isinstance(version, str) else None
            await transport.send(item.raw)
