"""One client's side of the forwarder (`mcpframe.proxy.forward`): its relay, its ordered writes, what it
subscribed to, and its handshake (replayed to a restarted upstream).

The client's bytes go through the core's `Relay`, which relays plain requests (their ids mapped and
spliced) and notifications without a Python object per message; the frames it holds (the handshake,
cancellations, progress tokens, subscriptions, answers, bad frames, and everything after the first of
them in a chunk) are decoded here and routed one by one by the forwarder, in stream order.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from mcpframe import core, jsonrpc
from mcpframe.session.batch import error_answer, too_large_answer
from mcpframe.transports.base import TransportClosedError

from .link import Writer
from .pump import ThreadWriter
from .reader import decode_held, held_decoder

if TYPE_CHECKING:
    from .forward import Forwarder

__all__ = ["Batch", "ClientSession"]

_FrameError = core.FrameError


class Batch:
    """One batch from a client: its answers, gathered into one array line (JSON-RPC 2.0) once the last
    request it forwarded is answered (or failed, or cancelled).

    The array is one frame, and its client refuses a frame over its limit: each answer is checked as it
    comes, and one that would take the array past `limit` bytes (the proxy's `max_frame`, which its
    clients share by default) is replaced by a `-32603` "Batch too large" error with the request's id, so
    the client gets every other answer and knows which requests to send again in a smaller batch. Only a
    batch of so many requests that their errors alone pass the limit still goes over it."""

    __slots__ = ("answers", "held", "limit", "routed", "waiting")

    def __init__(self, limit: int) -> None:
        self.answers: list[bytes] = []
        self.limit = limit
        self.held = 1  # bytes of the array line so far, its brackets and commas counted
        self.waiting = 0  # its requests forwarded and not answered yet
        self.routed = False  # every element was routed (until then more requests may come)

    def add(self, answer: bytes) -> None:
        """Put one answer (no LF) in the array, or its "Batch too large" error if it does not fit."""
        if self.held + len(answer) + 1 > self.limit:
            answer = too_large_answer(answer, self.limit)[:-1]
        self.held += len(answer) + 1
        self.answers.append(answer)

    def line(self) -> bytes:
        """The array line once the batch is complete and has answers, else `b""`."""
        if not self.routed or self.waiting or not self.answers:
            return b""
        return b"[" + b",".join(self.answers) + b"]\n"


class ClientSession:
    """One client's side of the forwarder: feed it the client's bytes; its answers go to `send`."""

    def __init__(self, forwarder: Forwarder, conn: int, writer: Writer, relay: core.Relay) -> None:
        self.conn = conn
        self._forwarder = forwarder
        self.writer = writer
        """Ordered writes to this client: the upstream reader and `feed` (its error answers) both write."""
        self._relay = relay
        self._requests = 0  # `relay.requests` when last looked at
        self._held = held_decoder(relay.max_frame)
        self._held_single = held_decoder(relay.max_frame, batches=False)
        self.batches = False
        self.ready: list[bytes] = []
        """Batch array lines completed by a client's cancellation (the request it waited for last)."""
        """Whether this client may send batches: its `initialize` negotiated a revision that has them
        (`protocol.batches_allowed`, the rule of the server the proxy fronts); until then, not."""
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
        relayed, held = self._relay.feed(chunk)
        up = self._forwarder.writer()
        if not held and up is not None:  # the common chunk: plain requests and notifications only
            if relayed:
                if (requests := self._relay.requests) != self._requests:  # inline: the hot path
                    self._requests = requests
                    self._forwarder.relayed(self)
                try:
                    if rest := up.write_nowait(relayed):
                        return self._complete(b"", up, rest, b"")
                except TransportClosedError:
                    pass  # it died: `serve` fails the pending requests
            return None
        return self._dispatch(relayed, held, up)

    def feed_thread(self, chunk: bytes) -> Callable[[], Coroutine[Any, Any, None]] | None:
        """`feed` in the thread pump's reader thread (`mcpframe.proxy.pump`): plain frames are written
        upstream from this thread; anything else is returned as work for the event loop."""
        guard = self._forwarder.guard
        if guard is None:
            relayed, held = self._relay.feed(chunk)
        else:
            with guard:
                relayed, held = self._relay.feed(chunk)
        forwarder = self._forwarder
        up = forwarder.up
        if held or type(up) is not ThreadWriter:
            return functools.partial(self._dispatch_async, relayed, held)
        if relayed:
            if (requests := self._relay.requests) != self._requests:
                self._requests = requests
                forwarder.last = self  # `Forwarder.relayed`, inline
            # (not `contextlib.suppress`: an object and two calls per chunk on the hot path)
            try:  # noqa: SIM105
                up.write_blocking(relayed)
            except TransportClosedError:
                pass  # it died: `serve` fails the pending requests
        return None

    async def _dispatch_async(self, relayed: bytes, held: list[tuple[int, bytes] | core.FrameError]) -> None:
        if (rest := self._dispatch(relayed, held, self._forwarder.writer())) is not None:
            await rest

    def _dispatch(
        self, relayed: bytes, held: list[tuple[int, bytes] | core.FrameError], up: Writer | None
    ) -> Awaitable[None] | None:
        """Route what the relay held (and what it relayed before): the proxy's own answers back to the
        client, the rest upstream (started first if none runs); what is left to await, if anything."""
        upward, back = self._sort(relayed, held)
        rest_back = b""
        if back:
            with contextlib.suppress(TransportClosedError, OSError):  # the client is gone: nobody to answer
                rest_back = self.writer.write_nowait(back)
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
        if not self._relay.closed:
            guard = self._forwarder.guard  # the python `IdMap` is shared with the upstream's pump thread
            if guard is None:
                closed = self._relay.close()
            else:
                with guard:
                    closed = self._relay.close()
            upward, back = self._sort(*closed)
            if back:
                await self.deliver(back)
            if upward:
                await self._forwarder.to_upstream(self, upward)

    def _sort(self, relayed: bytes, held: list[tuple[int, bytes] | core.FrameError]) -> tuple[bytes, bytes]:
        """The frames for the upstream (the relayed ones first) and the proxy's own answers to this
        client, each joined."""
        self._note_requests()
        if not held:
            return relayed, b""
        upward: list[bytes] = [relayed[:-1]] if relayed else []
        back: list[bytes] = []
        decoder = self._held if self.batches else self._held_single
        for frame in held:
            items = decode_held(decoder, [frame])
            if items and items[0].batch is not None:
                self._route_batch(items, upward, back)
                continue
            for item in items:
                self._route(item, upward, back)
        if self.ready:
            back += self.ready
            self.ready.clear()
        if upward:
            upward.append(b"")
        return b"\n".join(upward), b"".join(back)

    def _note_requests(self) -> None:
        """Tell the forwarder when the relay forwarded requests of this session (`Forwarder.relayed`)."""
        if (requests := self._relay.requests) != self._requests:
            self._requests = requests
            self._forwarder.relayed(self)

    def _route_batch(
        self, items: list[core.Message | core.FrameError], upward: list[bytes], back: list[bytes]
    ) -> None:
        """Route a batch's elements: its requests upstream one by one, their answers (and the proxy's own
        errors for its bad elements) gathered into one array line for the client (`Batch`)."""
        batch = Batch(self._relay.max_frame)
        errors: list[bytes] = []
        for item in items:
            self._route(item, upward, errors, batch)
        for error in errors:
            batch.add(error[:-1])
        batch.routed = True
        if line := batch.line():
            back.append(line)

    def _route(
        self,
        item: core.Message | core.FrameError,
        upward: list[bytes],
        back: list[bytes],
        batch: Batch | None = None,
    ) -> None:
        """Route one held frame (or element of `batch`): to `upward` (for the upstream) or `back` (the
        proxy's answer)."""
        forwarder = self._forwarder
        if isinstance(item, _FrameError):
            if not jsonrpc.response_shaped(item.raw):  # a broken answer gets no answer
                back.append(error_answer(item, max_frame=self._relay.max_frame))
            return
        kind = item.kind
        frame: bytes | None
        if kind == "request":
            frame = forwarder.client_request(self, item, batch)
            if frame[-1:] == b"\n":  # an error answer of the proxy's own (forwarded frames have no LF)
                back.append(frame)
                return
        elif kind == "notification":
            frame = forwarder.client_notification(self, item)
        else:
            frame = forwarder.client_answer(self, item)
        if frame:
            upward.append(frame)
