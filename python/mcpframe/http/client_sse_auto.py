"""`AutoTransport`: one URL, either kind of MCP HTTP server (the specification's compatibility probe).

The client speaks Streamable HTTP first: its first POST is the real first request (`server/discover` or
`initialize`), so a Streamable HTTP server is never asked anything extra. Only when that POST is answered
404 or 405 (or 400 to `initialize`: a 400 to `server/discover` is also how a Streamable HTTP server without
that method may answer a request outside a session, so it proves nothing) does the transport GET the same
URL; if that opens an SSE stream whose first event is `endpoint`, the server speaks the 2024-11-05
HTTP+SSE transport, the request is sent again there, and everything after it goes that way. Otherwise the
POST's own answer stands (a 401 is never probed: it stays an authentication error; nor is a 5xx).

The probe is tried once: a second refusal is the server's answer. `kind` says what was decided.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Final, Literal

import anyio
import anyio.abc
import httpx

from mcpframe import protocol
from mcpframe._api import Id, MessageLike
from mcpframe.http.client import StreamableHTTPTransport
from mcpframe.http.client_sse import SSEConnectError, SSETransport
from mcpframe.http.client_wire import BackgroundTransport, HttpResponse, ndjson_frame
from mcpframe.http.options import HttpClientOptions
from mcpframe.transports.base import TransportClosedError

__all__ = ["AutoTransport"]

logger = logging.getLogger("mcpframe.http.client_sse")

_LEGACY_HINTS: Final = frozenset({404, 405})
"""Answers to the first POST that may mean "no Streamable HTTP here" whatever the request (400 only for
`initialize`)."""


class AutoTransport(BackgroundTransport):
    """A `Transport` that speaks Streamable HTTP, or the legacy HTTP+SSE transport when the server only
    knows that (see the module doc). The arguments are `StreamableHTTPTransport`'s."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        options: HttpClientOptions | None = None,
        auth: httpx.Auth | None = None,
    ) -> None:
        super().__init__(url, http_client, options, auth)
        opts = self.options
        # One connection pool for both kinds: the probe's GET reuses the POST's connection.
        self.streamable = StreamableHTTPTransport(url, headers=headers, http_client=self._http, options=opts)
        self.streamable.probe = self._probe
        # the shared client is ours, not the caller's: the lean POST path may still apply (options.lean)
        self.streamable._lean_wanted = opts.lean and self._own_http and auth is None
        self.legacy: SSETransport | None = None
        self._probed = False
        self._decided: Literal["streamable-http", "sse"] | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._closing = anyio.Event()

    @property
    def kind(self) -> Literal["streamable-http", "sse"] | None:
        """What the server speaks, once known (`None` before its first answer to a request)."""
        return self._decided

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the transport(s) until `aclose()`; for `TaskGroup.start`."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                await tg.start(self.streamable.run)
                task_status.started()
                await self._closing.wait()
                tg.cancel_scope.cancel()
        finally:
            self._tg = None
            if self._own_http:
                with anyio.CancelScope(shield=True):
                    await self._http.aclose()

    async def aclose(self) -> None:
        """Close whichever transport is in use (Streamable HTTP ends its session with DELETE). Idempotent."""
        await self.streamable.aclose()
        if self.legacy is not None:
            await self.legacy.aclose()
        self._closing.set()

    # ------------------------------------------------------------------ the Transport interface

    async def receive(self) -> bytes:
        """The next message(s) from the server as NDJSON; `b""` once closed."""
        legacy = self.legacy
        if legacy is None:
            data = await self.streamable.receive()
            legacy = self.legacy
            if data or legacy is None:
                return data
            # the Streamable HTTP side was closed because the server speaks the legacy transport
        return await legacy.receive()

    async def send(self, data: bytes) -> None:
        """Send over the transport in use (Streamable HTTP until the server proved legacy). What follows an
        `initialize` waits for its answer first (as `StreamableHTTPTransport.send` holds it), since that
        answer decides which transport is in use."""
        if self.legacy is None:
            await self.streamable.handshake_answered()
        await (self.legacy or self.streamable).send(data)

    @property
    def batches(self) -> bool:
        """`StreamableHTTPTransport.batches` (never on the legacy transport: 2024-11-05 has no batches)."""
        return self.legacy is None and self.streamable.batches

    async def send_batch(self, data: bytes, ids: Sequence[Id]) -> None:
        """`StreamableHTTPTransport.send_batch` (only while `batches` holds)."""
        await self.streamable.send_batch(data, ids)

    def held_cancel(self, rid: Id) -> anyio.Event | None:
        """`StreamableHTTPTransport.held_cancel` (the legacy transport holds no cancel back)."""
        return self.streamable.held_cancel(rid)

    # ------------------------------------------------------------------ the probe

    async def _probe(self, message: MessageLike, response: HttpResponse) -> bool:
        """`StreamableHTTPTransport.probe`: decide on the answer to a POSTed request; `True`: moved to SSE."""
        status = response.status_code
        if status < 300:
            self._settle("streamable-http")
            return False
        refused = status in _LEGACY_HINTS or (status == 400 and message.method == protocol.INITIALIZE)
        if not refused or self._probed or self._tg is None:
            return False
        self._probed = True
        legacy = SSETransport(
            self.url, headers=self.streamable.headers, http_client=self._http, options=self.options
        )
        try:
            await legacy.open()
        except SSEConnectError as exc:
            # the caller gets the POST's refusal; this says why the legacy transport was no way out either
            logger.warning("POST %s: HTTP %d, and the legacy SSE probe failed: %s", self.url, status, exc)
            return False
        logger.info("POST %s: HTTP %d; the server speaks the legacy HTTP+SSE transport", self.url, status)
        self.legacy = legacy
        self._settle("sse")
        await self._tg.start(legacy.run)
        with suppress(TransportClosedError):  # the stream ended at once: the Session sees it in `receive`
            await legacy.send(ndjson_frame(message))
        # Ends the Streamable HTTP side (it has no session to delete); a `receive` waiting on it moves on.
        self._tg.start_soon(self.streamable.aclose)
        return True

    def _settle(self, kind: Literal["streamable-http", "sse"]) -> None:
        self._decided = kind
        self.streamable.probe = None
