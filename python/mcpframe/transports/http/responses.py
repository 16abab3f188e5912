"""HTTP responses whose bodies are JSON-RPC."""

from __future__ import annotations

from starlette.responses import Response

from mcpframe import core, jsonrpc

__all__ = ["error_response", "json_response"]


def error_response(
    status: int,
    message: str,
    *,
    code: int = jsonrpc.INVALID_REQUEST,
    rid: int | str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """An HTTP error whose body is a JSON-RPC error response."""
    body = core.encode_error(rid, code, message)
    return Response(body, status, headers=headers, media_type="application/json")


def json_response(frame: bytes, headers: dict[str, str] | None = None) -> Response:
    """A 200 carrying one JSON-RPC frame (or a batch answer)."""
    return Response(frame.rstrip(b"\n"), 200, headers=headers, media_type="application/json")
