"""A thin in-memory client for server tests: a plain Session on the other end of a memory pair."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcpframe.server import Server
from mcpframe.server.eras import CLIENT_CAPABILITIES_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY
from mcpframe.server.lifecycle import Stop
from mcpframe.session import Message, Request, Session
from mcpframe.transports.memory import memory_pair

ClientHandler = Callable[[Request], Awaitable[Any]]


class Driver:
    """Sends raw MCP requests and records every notification the server sends."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.notes: list[tuple[str, Any]] = []
        self.arrived = anyio.Event()

    async def on_note(self, message: Message) -> None:
        self.notes.append((str(message.method), message.params))
        self.arrived.set()
        self.arrived = anyio.Event()

    def notes_of(self, method: str) -> list[Any]:
        return [params for name, params in self.notes if name == method]

    async def wait_for(self, method: str, count: int = 1) -> list[Any]:
        with anyio.fail_after(5):
            while len(self.notes_of(method)) < count:
                await self.arrived.wait()
        return self.notes_of(method)

    async def request(self, method: str, params: Any = None) -> Any:
        with anyio.fail_after(10):
            return await self.session.request(method, params)

    async def initialize(
        self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None
    ) -> Any:
        params = {
            "protocolVersion": version,
            "capabilities": capabilities if capabilities is not None else {},
            "clientInfo": {"name": "test-driver", "version": "0.0.1"},
        }
        result = await self.request("initialize", params)
        await self.session.notify("notifications/initialized")
        return result

    async def modern(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        log_level: str | None = None,
        version: str = "2026-07-28",
    ) -> Any:
        meta: dict[str, Any] = {
            PROTOCOL_VERSION_KEY: version,
            CLIENT_CAPABILITIES_KEY: capabilities if capabilities is not None else {},
        }
        if log_level is not None:
            meta[LOG_LEVEL_KEY] = log_level
        body = dict(params or {})
        body["_meta"] = {**body.get("_meta", {}), **meta}
        return await self.request(method, body)


@asynccontextmanager
async def connect(
    server: Server, client_handler: ClientHandler | None = None, *, stops: Sequence[Stop] = ()
) -> AsyncIterator[Driver]:
    """Serve `server` on one end of a memory pair and yield a Driver on the other; the connection's
    requests are tracked by each of `stops` in turn (`Stop.track_connection`, as a graceful stop does)."""
    near, far = memory_pair()
    session = Session(near, request_handler=client_handler)
    driver = Driver(session)
    session.notification_handler = driver.on_note
    async with anyio.create_task_group() as tg:
        if stops:
            conn = server.connection()
            for stop in stops:
                stop.track_connection(conn)
            handle = conn.handle_request
            served = Session(far, request_handler=handle, notification_handler=conn.handle_notification)
            tg.start_soon(conn.run, served)
        else:
            tg.start_soon(server.serve, far)
        tg.start_soon(session.run)
        try:
            yield driver
        finally:
            await session.aclose()
            await near.aclose()
            tg.cancel_scope.cancel()


@asynccontextmanager
async def legacy(server: Server, version: str = "2025-11-25", **options: Any) -> AsyncIterator[Driver]:
    """`connect` followed by the initialize handshake."""
    async with connect(server, options.pop("client_handler", None), stops=options.pop("stops", ())) as driver:
        await driver.initialize(version, options.pop("capabilities", None))
        yield driver
