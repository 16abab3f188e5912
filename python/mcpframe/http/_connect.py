"""``connect(url)`` and ``connect_sse(url)``: an MCP ``Client`` over HTTP, built here in the host layer.

The client layer sits below HTTP and never imports it: it takes an *opener* (``Client(opener=...)``), and
this module hands it one that makes the HTTP transport: ``AutoTransport`` (Streamable HTTP, or the legacy
HTTP+SSE transport when the server only speaks that), ``StreamableHTTPTransport`` or ``SSETransport``. That
is also why the issue's ``Client.sse(url)`` is ``mcpframe.http.connect_sse(url)``. The transports need
``httpx`` (the ``http`` extra), imported when a client is made, so ``import mcpframe.http`` works without
it and a missing extra is reported where the client is made, with the command that installs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Literal, Unpack

from mcpframe._extras import install_hint
from mcpframe.client import Client, ClientSettings
from mcpframe.http.options import HttpClientOptions
from mcpframe.transports import Transport

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpTransportKind", "connect", "connect_sse"]

HttpTransportKind = Literal["auto", "streamable-http", "sse"]
"""Which HTTP transport ``connect`` speaks: ``"auto"`` probes (see ``connect``), or only one of them."""


def connect(
    url: str,
    *,
    transport: HttpTransportKind = "auto",
    headers: Mapping[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    http_options: HttpClientOptions | None = None,
    auth: httpx.Auth | None = None,
    **settings: Unpack[ClientSettings],
) -> Client:
    """A client for the MCP server at ``url``; use it as ``async with connect(url) as client``.

    ``transport="auto"`` (the default) speaks Streamable HTTP and falls back to the legacy HTTP+SSE
    transport (2024-11-05) as the specification's backwards-compatibility section says: when the first
    POST is answered 404 or 405 (or 400 to ``initialize``) and a GET of ``url`` opens an SSE stream whose
    first event is ``endpoint``. A Streamable HTTP server sees no extra request. ``"streamable-http"``
    never probes; ``"sse"`` speaks only the legacy transport (``url`` is then the SSE stream's, e.g.
    ``.../sse``; see ``connect_sse``).

    ``headers`` go with every request (e.g. ``Authorization``); ``http_client`` is an ``httpx.AsyncClient``
    to send them with (proxies, TLS, event hooks; the caller closes it); ``http_options`` are the
    transport's knobs (``HttpClientOptions``: connect timeout, which also bounds the wait for the legacy
    ``endpoint`` event, reconnection, the GET stream, the inbox); ``auth`` is an ``httpx.Auth`` that signs
    every request, e.g. ``mcpframe.http.auth.OAuthClientProvider`` (OAuth 2.1: discovery, PKCE, refresh;
    see docs/auth.md); with ``http_client``, give it to that client instead. The other keywords are the
    client's, as for ``Client(...)``: ``mode``, ``timeout``, the handlers, ``session_options``...
    """
    if transport not in ("auto", "streamable-http", "sse"):
        raise ValueError(f"transport must be 'auto', 'streamable-http' or 'sse', got {transport!r}")
    try:  # optional: httpx (the Streamable HTTP transport first: every kind builds on its modules)
        from mcpframe.http.client import StreamableHTTPTransport  # noqa: PLC0415
        from mcpframe.http.client_sse import SSETransport  # noqa: PLC0415
        from mcpframe.http.client_sse_auto import AutoTransport  # noqa: PLC0415
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"mcpframe.http.connect needs the http extra ({exc}); try: {install_hint('http')}",
            name=exc.name,
        ) from exc
    make: type[AutoTransport | StreamableHTTPTransport | SSETransport]
    if transport == "auto":
        make = AutoTransport
    elif transport == "sse":
        make = SSETransport
    else:
        make = StreamableHTTPTransport

    def open_http() -> AbstractAsyncContextManager[Transport]:
        # Each transport is its own async context manager: it runs its background tasks while entered.
        return make(url, headers=headers, http_client=http_client, options=http_options, auth=auth)

    return Client(opener=open_http, **settings)


def connect_sse(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    http_options: HttpClientOptions | None = None,
    auth: httpx.Auth | None = None,
    **settings: Unpack[ClientSettings],
) -> Client:
    """A client for a server speaking the legacy HTTP+SSE transport (2024-11-05) at ``url``, the URL of
    its SSE stream (often ``.../sse``): ``async with connect_sse(url) as client``.

    ``connect(url, transport="sse")``; the issue's ``Client.sse(url)``, which lives here because the
    client layer may not import the HTTP host. Opening it GETs ``url`` and waits for the ``endpoint`` event
    (``HttpClientOptions.connect_timeout``); ``SSEConnectError`` says why when there is none, or when it
    names another origin. The keywords are ``connect``'s.
    """
    return connect(
        url,
        transport="sse",
        headers=headers,
        http_client=http_client,
        http_options=http_options,
        auth=auth,
        **settings,
    )
