"""``connect(url)``: an MCP ``Client`` over Streamable HTTP, built here in the host layer.

The client layer sits below HTTP and never imports it: it takes an *opener* (``Client(opener=...)``), and
this module hands it one that makes a ``StreamableHTTPTransport``. The transport needs ``httpx`` (the
``http`` extra), imported when ``connect`` is called, so ``import mcpframe.http`` works without
it and a missing extra is reported where the client is made, with the command that installs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Unpack

from mcpframe._extras import install_hint
from mcpframe.client import Client, ClientSettings
from mcpframe.http.options import HttpClientOptions

if TYPE_CHECKING:
    import httpx

__all__ = ["connect"]


def connect(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    http_options: HttpClientOptions | None = None,
    **settings: Unpack[ClientSettings],
) -> Client:
    """A client for the Streamable HTTP endpoint ``url``; use it as ``async with connect(url) as client``.

    ``headers`` go with every request (e.g. ``Authorization``); ``http_client`` is an ``httpx.AsyncClient``
    to send them with (proxies, TLS, event hooks; the caller closes it); ``http_options`` are the
    transport's knobs (``HttpClientOptions``: connect timeout, reconnection, the GET stream). The other
    keywords are the client's, as for ``Client(...)``: ``mode``, ``timeout``, the handlers,
    ``session_options``...
    """
    try:
        from mcpframe.http.client import StreamableHTTPTransport  # noqa: PLC0415 (optional: httpx)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"mcpframe.http.connect needs the http extra ({exc}); try: {install_hint('http')}",
            name=exc.name,
        ) from exc

    def open_http() -> StreamableHTTPTransport:
        # The transport is its own async context manager: it runs its background tasks while entered.
        return StreamableHTTPTransport(url, headers=headers, http_client=http_client, options=http_options)

    return Client(opener=open_http, **settings)
