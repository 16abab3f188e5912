"""The JSON-RPC session layer: a peer over a Transport (see ``docs/session-api.md``)."""

from __future__ import annotations

from mcpframe._api import MessageLike as Message
from mcpframe.session.errors import ConnectionClosed, JSONRPCError, RequestTimeout
from mcpframe.session.options import SessionOptions
from mcpframe.session.peer import NotificationHandler, RequestHandler, Session
from mcpframe.session.request import ProgressCallback, Request
from mcpframe.session.suspends import SuspendRule

__all__ = [
    "ConnectionClosed",
    "JSONRPCError",
    "Message",
    "NotificationHandler",
    "ProgressCallback",
    "Request",
    "RequestHandler",
    "RequestTimeout",
    "Session",
    "SessionOptions",
    "SuspendRule",
]
