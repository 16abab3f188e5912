"""One client's side of the forwarder (`mcpframe.proxy.forward`): its decoder, its ordered writes, what
it has in flight and subscribed to, and its handshake (replayed to a restarted upstream).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mcpframe import core, jsonrpc
from mcpframe.transports.base import TransportClosedError

from .link import Writer

if TYPE_CHECKING:
    from .forward import Forwarder

__all__ = ["ClientSession"]

_FrameError = core.FrameError


class ClientSession:
    """One client's side of the forwarder: feed it the client's bytes; its answers go to `send`."""

    def __init__(self, forwarder: Forwarder, conn: int, writer: Writer, max_frame: int) -> None:
        self.conn = conn
        self._forwarder = forwarder
        self.writer = writer
        """Ordered writes to this client: the upstream reader and `feed` (its error answers) both write."""
        self._decoder = core.Decoder(max_frame=max_frame, lazy=True)
        self.in_flight: set[int] = set()
        """Upstream ids of this session's requests awaiting an answer."""
        self.subscriptions: set[str] = set()
        """Resource URIs this session subscribed to (a `resources/subscribe` that succeeded)."""
        self.initialize: bytes | None = None
        self.initialized: bytes | None = None
        """The handshake as the client sent it, replayed to a restarted upstream."""

    async def deliver(self, data: bytes) -> None:
        """Hand whole frames to the client (in order with everything else sent to it)."""
        await self.writer.write(data)

    async def feed(self, chunk: bytes) -> None:
        """Route what `chunk` completes; returns once the upstream took it (back-pressure)."""
        if (rest := self.feed_nowait(chunk)) is not None:
            await rest

    def feed_nowait(self, chunk: bytes) -> Awaitable[None] | None:
        """`feed` without a task switch when both sides take the bytes at once (the common case), for a
        transport's read callback; else what is left to await (stop reading until it is done)."""
        upward, back = self._sort(self._decoder.feed(chunk))
        rest_back = b""
        if back:
            with contextlib.suppress(TransportClosedError, OSError):  # the client is gone: nobody to answer
                rest_back = self.writer.write_nowait(back)
        forwarder = self._forwarder
        up = forwarder.writer()
        rest_up = b""
        if upward and up is not None:
            try:
                rest_up, upward = up.write_nowait(upward), b""
            except TransportClosedError:
                upward = b""  # it died: `serve` fails the pending requests
        if rest_back or rest_up or upward:
            return self._complete(rest_back, up, rest_up, upward)
        return None

    async def _complete(self, rest_back: bytes, up: Writer | None, rest_up: bytes, upward: bytes) -> None:
        if rest_back:
            with contextlib.suppress(TransportClosedError, OSError):
                await self.writer.write_rest(rest_back)
        if rest_up and up is not None:
            with contextlib.suppress(TransportClosedError):
                await up.write_rest(rest_up)
        if upward:  # no upstream yet (or any more): start it
            await self._forwarder.to_upstream(self, upward)

    async def end(self) -> None:
        """The client's input ended: decode its last unterminated frame, if any."""
        if not self._decoder.closed:
            upward, back = self._sort(self._decoder.close())
            if back:
                await self.deliver(back)
            if upward:
                await self._forwarder.to_upstream(self, upward)

    def _sort(self, items: list[core.Message | core.FrameError]) -> tuple[bytes, bytes]:
        """The frames for the upstream and the proxy's own answers to this client, each joined."""
        forwarder = self._forwarder
        upward: list[bytes] = []
        back: list[bytes] = []
        for item in items:
            if isinstance(item, _FrameError):
                if not jsonrpc.response_shaped(item.raw):  # a broken answer gets no answer
                    back.append(item.to_response())
                continue
            kind = item.kind
            frame: bytes | None
            if kind == "request":
                frame = forwarder.client_request(self, item)
                if frame[-1:] == b"\n":  # an error answer of the proxy's own (forwarded frames have no LF)
                    back.append(frame)
                    continue
            elif kind == "notification":
                frame = forwarder.client_notification(self, item)
            else:
                frame = forwarder.client_answer(self, item)
            if frame:
                upward.append(frame)
        if upward:
            upward.append(b"")
        return b"\n".join(upward), b"".join(back)
