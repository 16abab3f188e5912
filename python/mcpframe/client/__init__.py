"""The MCP client: ``Client(server)`` in memory, ``Client.stdio(command, args)`` for a child process.

Over Streamable HTTP the host layer builds the client: ``mcpframe.http.connect(url)``.
"""

from __future__ import annotations

from mcpframe.client.app import Client, Opener, Servable
from mcpframe.client.connection import LEGACY_VERSIONS, MODERN_VERSION, IncompatibleServerError
from mcpframe.client.inbound import (
    ElicitationHandler,
    LoggingHandler,
    NotificationCallback,
    Roots,
    SamplingHandler,
)
from mcpframe.client.methods import Era, LogLevel, Methods, Requester
from mcpframe.client.options import DEFAULT_TIMEOUT, ClientOptions, ClientSettings, Mode
from mcpframe.client.tasks import TaskHandle, TaskStatusCallback, TaskTracker

__all__ = [
    "DEFAULT_TIMEOUT",
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "Client",
    "ClientOptions",
    "ClientSettings",
    "ElicitationHandler",
    "Era",
    "IncompatibleServerError",
    "LogLevel",
    "LoggingHandler",
    "Methods",
    "Mode",
    "NotificationCallback",
    "Opener",
    "Requester",
    "Roots",
    "SamplingHandler",
    "Servable",
    "TaskHandle",
    "TaskStatusCallback",
    "TaskTracker",
]
