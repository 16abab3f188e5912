"""The SDK's outbound seams (``DispatchContext``, ``Outbound``) on an mcpframe ``Request``/``Session``.

The SDK's own ``ServerSession`` and ``Connection`` classes run unchanged on top of these, so everything a
handler reaches through ``ctx.session`` (progress, log messages, elicitation, sampling, roots, list-changed
notifications) keeps the SDK's behaviour and goes out on mcpframe's wire. On 2026-07-28 requests the
channels refuse server-to-client requests with the SDK's ``NoBackChannelError``, as the SDK does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.transport_context import TransportContext

from mcpframe.session import JSONRPCError, Request, Session

__all__ = ["ConnectionChannel", "NotificationChannel", "RequestChannel"]

_TRANSPORTS = {flag: TransportContext(kind="mcpframe", can_send_request=flag) for flag in (False, True)}


async def _ask(
    send: Callable[..., Awaitable[Any]],
    method: str,
    params: Mapping[str, Any] | None,
    opts: CallOptions | None,
) -> dict[str, Any]:
    """Send with ``send`` (``Request.send_request`` or ``Session.request``); errors become ``MCPError``."""
    options = opts or {}
    try:
        result = await send(
            method, params, timeout=options.get("timeout"), on_progress=options.get("on_progress")
        )
    except JSONRPCError as exc:
        raise MCPError(exc.code, exc.message, exc.data) from None
    return result if isinstance(result, dict) else {}


class RequestChannel:
    """The request-scoped channel of one incoming request (the SDK's ``DispatchContext``)."""

    __slots__ = ("_cancel", "_request", "can_send_request")

    def __init__(self, request: Request, *, can_send_request: bool) -> None:
        self._request = request
        self.can_send_request = can_send_request
        self._cancel: anyio.Event | None = None

    @property
    def transport(self) -> TransportContext:
        """What the SDK calls transport metadata (no headers: mcpframe keeps HTTP out of handlers)."""
        return _TRANSPORTS[self.can_send_request]

    @property
    def request_id(self) -> int | str:
        """The JSON-RPC id of the request."""
        return self._request.id

    @property
    def message_metadata(self) -> None:
        """Nothing: the SDK's HTTP request object and SSE callbacks do not exist here."""
        return None

    @property
    def cancel_requested(self) -> anyio.Event:
        """Set when the request was cancelled (checked when read; the handler is cancelled anyway)."""
        if self._cancel is None:
            self._cancel = anyio.Event()
        if self._request.cancelled:
            self._cancel.set()
        return self._cancel

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        """A server-to-client request related to this one (refused on 2026-07-28)."""
        if not self.can_send_request:
            raise NoBackChannelError(method)
        return await _ask(self._request.send_request, method, params, opts)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        """A notification related to this request."""
        await self._request.send_notification(method, params)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """``notifications/progress`` for the request's token (nothing without one)."""
        await self._request.report_progress(progress, total, message)


class ConnectionChannel:
    """The connection-wide channel (the SDK's ``Outbound`` of a ``Connection``)."""

    __slots__ = ("_session", "can_send_request")

    def __init__(self, session: Session, *, can_send_request: bool) -> None:
        self._session = session
        self.can_send_request = can_send_request

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        """A server-to-client request on the connection (refused on 2026-07-28)."""
        if not self.can_send_request:
            raise NoBackChannelError(method)
        return await _ask(self._session.request, method, params, opts)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        """A notification on the connection."""
        await self._session.notify(method, params)


class NotificationChannel(ConnectionChannel):
    """What the SDK's notification handlers get as their ``DispatchContext`` (no request, no progress)."""

    __slots__ = ()

    def __init__(self, session: Session) -> None:
        super().__init__(session, can_send_request=True)

    @property
    def transport(self) -> TransportContext:
        """Transport metadata, as for a request."""
        return _TRANSPORTS[True]

    @property
    def request_id(self) -> None:
        """A notification has no id."""
        return None

    @property
    def message_metadata(self) -> None:
        """Nothing (see ``RequestChannel``)."""
        return None

    @property
    def cancel_requested(self) -> anyio.Event:
        """Never set: a notification cannot be cancelled."""
        return anyio.Event()

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Nothing: progress belongs to requests."""
