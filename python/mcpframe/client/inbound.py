"""What the server asks of the client: sampling, elicitation, roots, ping, and its notifications.

The same handlers serve both eras: legacy servers send ``sampling/createMessage`` etc. as requests during a
call; 2026-07-28 servers return ``resultType: "input_required"`` with ``inputRequests``, which the client
fulfils here and answers by retrying the call.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from mcpframe import jsonrpc, protocol
from mcpframe.session import JSONRPCError, Message, Request

__all__ = [
    "ElicitationHandler",
    "Inbound",
    "LoggingHandler",
    "NotificationCallback",
    "Roots",
    "SamplingHandler",
]

SamplingHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""``sampling/createMessage`` params -> a CreateMessageResult dict."""
ElicitationHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""``elicitation/create`` params -> an ElicitResult dict (``{"action": "accept", "content": {...}}``)."""
Roots = Sequence[dict[str, Any]] | Callable[[], Awaitable[Sequence[dict[str, Any]]]]
"""The client's roots (``[{"uri": "file:///...", "name": ...}]``), or an async function returning them."""
LoggingHandler = Callable[[dict[str, Any]], Any]
"""Called with the params of each ``notifications/message``; may be async."""
NotificationCallback = Callable[[str, Any], Any]
"""Called with ``(method, params)`` of every server notification; may be async."""


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class Inbound:
    """Answers server-to-client requests and routes server notifications to the user's callbacks."""

    def __init__(
        self,
        *,
        sampling: SamplingHandler | None = None,
        elicitation: ElicitationHandler | None = None,
        roots: Roots | None = None,
        logging: LoggingHandler | None = None,
        notifications: NotificationCallback | None = None,
    ) -> None:
        self.sampling = sampling
        self.elicitation = elicitation
        self.roots = roots
        self.logging = logging
        self.notifications = notifications
        self.acknowledged: MemoryObjectSendStream[dict[str, Any]] | None = None

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these handlers provide."""
        caps: dict[str, Any] = {}
        if self.sampling is not None:
            caps["sampling"] = {}
        if self.elicitation is not None:
            caps["elicitation"] = {"form": {}, "url": {}}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True}
        return caps

    async def handle_request(self, request: Request) -> Any:
        """The Session's request handler (legacy era)."""
        params = request.params if isinstance(request.params, dict) else {}
        return await self.answer(request.method, params)

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        """The result for one server request, from the user's handlers."""
        if method == protocol.PING:
            return {}
        if method == protocol.SAMPLING_CREATE_MESSAGE and self.sampling is not None:
            return await self.sampling(params)
        if method == protocol.ELICITATION_CREATE and self.elicitation is not None:
            return await self.elicitation(params)
        if method == protocol.ROOTS_LIST and self.roots is not None:
            roots = self.roots if isinstance(self.roots, Sequence) else await self.roots()
            return {"roots": list(roots)}
        raise JSONRPCError(
            jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method} (the client has no handler)"
        )

    async def fulfil(self, input_requests: Any) -> dict[str, Any]:
        """Answers to the ``inputRequests`` of an ``input_required`` result, keyed like them."""
        if not isinstance(input_requests, dict):
            raise JSONRPCError(jsonrpc.INVALID_PARAMS, '"inputRequests" must be an object')
        responses: dict[str, Any] = {}
        for key, wanted in input_requests.items():
            if not isinstance(wanted, dict) or not isinstance(wanted.get("method"), str):
                raise JSONRPCError(jsonrpc.INVALID_PARAMS, f"input request {key!r} has no method")
            params = wanted.get("params")
            responses[key] = await self.answer(wanted["method"], params if isinstance(params, dict) else {})
        return responses

    async def handle_notification(self, message: Message) -> None:
        """The Session's notification handler."""
        method = message.method or ""
        params = message.params
        if method == protocol.NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED and self.acknowledged is not None:
            accepted = params.get("notifications") if isinstance(params, dict) else None
            with suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.acknowledged.send_nowait(accepted if isinstance(accepted, dict) else {})
            return
        if method == protocol.NOTIFICATIONS_MESSAGE and self.logging is not None and isinstance(params, dict):
            await _maybe_await(self.logging(params))
        if self.notifications is not None:
            await _maybe_await(self.notifications(method, params))
