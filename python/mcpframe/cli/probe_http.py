"""The HTTP side of `mcpframe probe`: an httpx client that remembers what the wire said.

The HTTP client transport turns a failed exchange into a JSON-RPC error for the request (so a
connection survives it), which loses the HTTP status: a 401 arrives as "Unauthorized ..." with code
-32600. The probe wants to name the reason exactly, so it hands `mcpframe.http.connect` its own
`httpx.AsyncClient` whose transport notes the first 401 (with its `WWW-Authenticate`) and the first
connection failure, and reads them back when the probe fails.
"""

from __future__ import annotations

from typing import Any

import httpx

from mcpframe.http import connect
from mcpframe.http.client_wire import shared_ssl_context

__all__ = ["Witness", "open_client"]


class Witness(httpx.AsyncBaseTransport):
    """An httpx transport that forwards to the real one and remembers auth and connection failures."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport(verify=shared_ssl_context())
        self.unauthorized: str | None = None  # the WWW-Authenticate of the first 401 ("" without one)
        self.refused: str | None = None  # the first connection failure: its URL, and what httpx says

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.ConnectError as exc:
            if self.refused is None:
                self.refused = f"{request.url} ({str(exc) or type(exc).__name__})"
            raise
        if response.status_code == 401 and self.unauthorized is None:
            self.unauthorized = response.headers.get("www-authenticate", "")
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

    def reason(self, step: str) -> str | None:
        """The one line for what the wire said, if it explains a failure."""
        if self.unauthorized is not None:
            hint = f" ({self.unauthorized})" if self.unauthorized else ""
            return f"auth required: HTTP 401 during {step}{hint}; pass --header 'Authorization: Bearer ...'"
        if self.refused is not None:
            return f"connection refused: {self.refused}"
        return None


def open_client(url: str, headers: dict[str, str]) -> tuple[Any, httpx.AsyncClient, Witness]:
    """A `Client` for ``url`` (auto transport), its httpx client (the caller closes it), the witness."""
    witness = Witness()
    # the timeouts of the transport's own client: no read timeout (the probe has its own --timeout)
    http = httpx.AsyncClient(
        transport=witness, timeout=httpx.Timeout(10.0, read=None, pool=None), follow_redirects=False
    )
    return connect(url, headers=headers, http_client=http, timeout=None), http, witness
