"""The ASGI side of the HTTP server, without a framework: a request's headers read once from its scope."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from mcpframe import core

__all__ = [
    "ClientDisconnect",
    "HttpRequest",
    "Receive",
    "Scope",
    "Send",
    "TooLarge",
    "TooSlow",
    "header_dict",
    "wait_disconnect",
    "watch_disconnect",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# the native core's `header_dict` (`header_dict` below); the python one's checks make it slower than a
# comprehension, so there the comprehension reads every request
_NATIVE_HEADERS = core.header_dict if core.BACKEND == "native" else None


class ClientDisconnect(Exception):
    """The client went away before its request body was read."""


class TooLarge(Exception):
    """The request body exceeds the limit."""


class TooSlow(Exception):
    """The request body did not all come within its deadline (a slow-loris client)."""


def header_dict(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """ASGI headers as a dict: lower-case names (ASGI servers give them so: uvicorn, hypercorn, granian and
    `wire.py` do; Starlette relies on it too), the first of a repeated header kept (built from the end).

    The native core builds it in one call (`core.header_dict`: twelve `decode` calls and a comprehension
    cost ~10k instructions a request); a server that gives the pairs in another shape than a list of
    tuples (lists, say) is read here, as is everything on the python backend."""
    if _NATIVE_HEADERS is not None:
        try:
            return _NATIVE_HEADERS(raw)
        except TypeError:
            pass
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(raw)}


class HttpRequest:
    """An HTTP request: method, headers (lower-case names; the first of repeated ones) and its body."""

    __slots__ = ("headers", "method", "receive", "scope")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self.method: str = scope["method"]
        self.headers = header_dict(scope["headers"])
        self.receive = receive

    @property
    def base_url(self) -> str:
        """`scheme://host[:port][root_path]`, as the client addressed this server."""
        scope = self.scope
        host = self.headers.get("host")
        if host is None:
            server = scope.get("server") or ("localhost", None)
            host = server[0] if server[1] is None else f"{server[0]}:{server[1]}"
        return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}"

    async def body(self, limit: int, timeout: float | None = None) -> bytes:
        """The whole body; `TooLarge` past `limit` bytes, `ClientDisconnect` if the client left, `TooSlow`
        if it is not all in within `timeout` seconds (`None`: no bound), so that a client sending its head
        and then a byte at a time (or nothing) cannot hold a request, and its connection, forever."""
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            return await self._body(limit)
        raise TooSlow

    async def _body(self, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] != "http.request":
                raise ClientDisconnect
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def wait_disconnect(receive: Receive) -> None:
    """Return once the client has disconnected (any request body left is discarded)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def watch_disconnect(receive: Receive, callback: Callable[[], object]) -> Callable[[], object]:
    """Call `callback()` once the client disconnects (its request body read already); returns what stops
    the watching. The lean server's `receive` tells of it by a callback of its own (`on_disconnect`: no
    task); any other server's is watched by a task reading `receive`."""
    hook = getattr(receive, "on_disconnect", None)
    if hook is not None:
        hook(callback)
        return lambda: hook(None)

    async def watch() -> None:
        await wait_disconnect(receive)
        callback()

    return asyncio.get_running_loop().create_task(watch()).cancel
