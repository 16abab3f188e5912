"""The redirect of the authorization code grant, caught on this machine: for command-line tools.

`LoopbackCallback` listens on 127.0.0.1 (RFC 8252 section 7.3: a loopback redirect URI for native apps),
opens the user's browser on the authorization URL (`redirect_handler`) and waits for the browser to come
back to `redirect_uri` with the code (`callback_handler`), which it answers with a short page saying the
window may be closed::

    async with LoopbackCallback() as loopback:
        auth = OAuthClientProvider(url, redirect_uri=loopback.redirect_uri,
                                   redirect_handler=loopback.redirect_handler,
                                   callback_handler=loopback.callback_handler)
        async with connect(url, auth=auth) as client:
            ...

The port is picked by the system unless given; a client registered dynamically is registered with that
redirect URI, so a tool that keeps its registration in a `TokenStorage` should use a fixed `port`.
Requests are read with a bound (8 KiB of head, `timeout` seconds each); anything but the callback path
gets a 404 and the wait goes on.
"""

from __future__ import annotations

import contextlib
import html
import logging
import webbrowser
from collections.abc import Callable
from types import TracebackType
from typing import Self
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc

from .auth_endpoints import OAuthFlowError

__all__ = ["LoopbackCallback"]

logger = logging.getLogger("mcpframe.http.auth_loopback")

MAX_HEAD = 8192
_PAGE = "<!doctype html><title>mcpframe</title><p>{}</p>"


class LoopbackCallback:
    """A one-page HTTP server on 127.0.0.1 catching the authorization redirect (see the module doc).

    `open_browser(url)` shows the authorization URL (default: `webbrowser.open`, printing nothing; pass
    e.g. `print` on a machine without a browser).
    """

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        timeout: float = 300.0,
        open_browser: Callable[[str], object] | None = None,
    ) -> None:
        self.port = port
        self.path = path
        self.timeout = timeout
        self.open_browser = open_browser or webbrowser.open
        self._listener: anyio.abc.SocketListener | None = None

    @property
    def redirect_uri(self) -> str:
        """`http://127.0.0.1:<port><path>` (the port bound once entered)."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def __aenter__(self) -> Self:
        listeners = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        listener = listeners.listeners[0]  # one address: 127.0.0.1
        assert isinstance(listener, anyio.abc.SocketListener)
        self._listener = listener
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._listener is not None:
            await self._listener.aclose()
            self._listener = None

    async def redirect_handler(self, url: str) -> None:
        """Open the browser on the authorization URL."""
        logger.info("authorize in your browser: %s", url)
        self.open_browser(url)

    async def callback_handler(self) -> tuple[str, str | None]:
        """Wait (at most `timeout` seconds) for the redirect; its `code` and `state`."""
        if self._listener is None:
            raise RuntimeError("use LoopbackCallback as `async with LoopbackCallback() as loopback`")
        listener = self._listener
        with anyio.move_on_after(self.timeout):
            while True:
                stream = await listener.accept()
                async with stream:
                    found = await self._serve(stream)
                if found is not None:
                    return found
        raise OAuthFlowError(
            f"no authorization redirect came back to {self.redirect_uri} in {self.timeout:g} s"
        )

    async def _serve(self, stream: anyio.abc.SocketStream) -> tuple[str, str | None] | None:
        """Answer one request; the code and state when it was the callback."""
        head = b""
        with anyio.move_on_after(10):
            while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
                try:
                    head += await stream.receive(4096)
                except anyio.EndOfStream:
                    break
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        target = rest.rpartition(" ")[0] or rest
        parts = urlsplit(target)
        if method != "GET" or parts.path != self.path:
            await _reply(stream, 404, "Not found.")
            return None
        query = parse_qs(parts.query)
        if "error" in query:
            text = query["error"][0] + ": " + query.get("error_description", [""])[0]
            await _reply(stream, 400, f"Authorization failed ({text}).")
            raise OAuthFlowError(f"the authorization server refused: {text}")
        code, state = query.get("code", [""])[0], query.get("state", [None])[0]
        await _reply(stream, 200, "Authorized: you may close this window.")
        return code, state


async def _reply(stream: anyio.abc.SocketStream, status: int, text: str) -> None:
    body = _PAGE.format(html.escape(text)).encode()
    head = (
        f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
        f"Content-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(head.encode() + body)
