"""Exceptions of the JSON-RPC session layer."""

from __future__ import annotations

from typing import Any

from mcpframe import jsonrpc

__all__ = ["ConnectionClosed", "JSONRPCError", "RequestTimeout"]


class JSONRPCError(Exception):
    """A JSON-RPC error: raise it from a handler to answer with it; ``Session.request`` raises it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object (``data`` omitted when ``None``)."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class RequestTimeout(JSONRPCError, TimeoutError):
    """No response arrived in time (``jsonrpc.REQUEST_TIMEOUT``)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(jsonrpc.REQUEST_TIMEOUT, message, data)


class ConnectionClosed(Exception):
    """The connection ended (the peer went away or the session was closed) while a request was pending."""
