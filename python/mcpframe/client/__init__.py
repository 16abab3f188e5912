"""The MCP client: ``Client(server)`` in memory, ``Client.stdio(command, args)`` for a child process."""

from __future__ import annotations

from mcpframe.client.app import LEGACY_VERSIONS, MODERN_VERSION, Client, IncompatibleServerError
from mcpframe.client.inbound import (
    ElicitationHandler,
    LoggingHandler,
    NotificationCallback,
    Roots,
    SamplingHandler,
)
from mcpframe.client.methods import LogLevel

__all__ = [
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "Client",
    "ElicitationHandler",
    "IncompatibleServerError",
    "LogLevel",
    "LoggingHandler",
    "NotificationCallback",
    "Roots",
    "SamplingHandler",
]
