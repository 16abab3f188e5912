"""Helpers for session tests: a raw JSON-RPC peer driven by the test, a session running a handler with
one on its other end, and a small handler set."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import orjson

from mcpframe import core
from mcpframe._unstable import asyncio_tasks
from mcpframe.session import JSONRPCError, Request, Session
from mcpframe.transports import Transport, memory_pair

EAGER_START = asyncio_tasks.CHOICE.private or asyncio_tasks.PUBLIC_EAGER is not None
"""Whether a handler can start inside the reader's dispatch (``Session.eager_handlers``): the private task
switch, or the public eager task factory (3.12+). Without either (3.11 with ``MCPFRAME_PUBLIC_ONLY=1``)
every handler is a task of its own that first runs after the chunk was read: what only an eager start
can show (answers in arrival order, a handler that ran before the cancel in its chunk) is asserted only
where it is chosen."""


class RawPeer:
    """The test's end of a connection: writes bytes or objects, reads decoded messages."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.decoder = core.Decoder()
        self.queue: list[Any] = []

    async def send(self, message: bytes | dict[str, Any] | list[Any]) -> None:
        if not isinstance(message, bytes):
            message = orjson.dumps(message) + b"\n"
        await self.transport.send(message)

    async def request(self, rid: int | str, method: str, params: Any = None) -> None:
        await self.send(core.encode_request(rid, method, params))

    async def receive(self) -> Any:
        """The next decoded item; EOFError when the other side closed."""
        while not self.queue:
            data = await self.transport.receive()
            if not data:
                self.queue.extend(self.decoder.close())
                if not self.queue:
                    raise EOFError
                break
            self.queue.extend(self.decoder.feed(data))
        return self.queue.pop(0)

    async def until(self, rid: int | str) -> tuple[Any, list[Any]]:
        """Read until the response for ``rid``; return it and everything read before it."""
        seen: list[Any] = []
        while True:
            item = await self.receive()
            if getattr(item, "kind", None) in ("result", "error") and item.id == rid:
                return item, seen
            seen.append(item)


@contextlib.asynccontextmanager
async def raw_session(handler: Callable[[Request], Awaitable[Any]]) -> AsyncIterator[tuple[Session, RawPeer]]:
    """A `Session` running `handler` on one end of a memory pair (started once the caller first waits),
    the test's `RawPeer` on the other; closed on the way out."""
    left, right = memory_pair()
    peer = RawPeer(left)
    async with anyio.create_task_group() as tg:
        session = Session(right, request_handler=handler)
        tg.start_soon(session.run)
        yield session, peer
        await session.aclose()


async def settled(session: Session) -> None:
    """Let the loop run until no handler of `session` is in flight (bounded by the caller's fail_after)."""
    while session.in_flight:
        await anyio.lowlevel.checkpoint()


class Handlers:
    """A request handler with a few test methods, recording what happened."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started: dict[int | str, anyio.Event] = {}
        self.cancelled: dict[int | str, anyio.Event] = {}
        self.notifications: list[Any] = []

    def started_event(self, rid: int | str) -> anyio.Event:
        return self.started.setdefault(rid, anyio.Event())

    def cancelled_event(self, rid: int | str) -> anyio.Event:
        return self.cancelled.setdefault(rid, anyio.Event())

    async def __call__(self, req: Request) -> Any:
        method = getattr(self, "m_" + req.method.replace("/", "_"), None)
        if method is None:
            raise JSONRPCError(-32601, f"Method not found: {req.method}")
        return await method(req)

    async def m_echo(self, req: Request) -> Any:
        return req.params

    async def m_ping(self, req: Request) -> Any:
        return {}

    async def m_slow(self, req: Request) -> Any:
        self.started_event(req.id).set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled_event(req.id).set()
            raise
        return "released"

    async def m_fail(self, req: Request) -> Any:
        raise ValueError("secret detail")

    async def m_rpcerror(self, req: Request) -> Any:
        raise JSONRPCError(-32602, "bad params", {"field": "x"})

    async def m_unencodable(self, req: Request) -> Any:
        return {"value": object()}

    async def m_progress(self, req: Request) -> Any:
        for step in range(3):
            await req.report_progress(step + 1, 3, f"step {step + 1}")
        return "done"

    async def m_ask(self, req: Request) -> Any:
        return await req.send_request("echo", {"asked": req.params})

    async def notification(self, message: Any) -> None:
        self.notifications.append((message.method, message.params))
