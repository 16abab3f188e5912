"""`mcpframe proxy -- command args`: one client on this process's stdin/stdout, one stdio server child.

The client's bytes go through a `Forwarder` session to the child (`ChildUpstream`). At the end of stdin
the child's stdin is closed too and its remaining output forwarded, as a direct connection would; the
proxy then exits 0, or with the child's status under `on_upstream_exit="exit"` (the proxy stands for the
child: its status is the child's however the child came to end; 0 if the child had to be ended, still
running `_FINISH_GRACE` seconds after its stdin closed). When the child dies first, its pending requests
fail with a clear error and, per `on_upstream_exit`, it is restarted on the next request (`restart`) or
the proxy exits with the child's status (`exit`). When nobody reads its stdout any more, the proxy ends
(status 0) and the child with it. SIGTERM and SIGINT end the child's process group and the proxy (status
128 + signal).

`options.pump` picks how bytes move (`mcpframe.proxy.pump`): a thread per direction, blocked in `readv`,
relaying plain frames and writing them itself (the default on POSIX pipes and sockets), or the event
loop's readiness callbacks (everywhere else, and with `pump="loop"`).
"""

from __future__ import annotations

import functools
import signal
import sys

import anyio
import anyio.abc

from mcpframe.transports.base import TransportClosedError
from mcpframe.transports.fd import FdTransport
from mcpframe.transports.stdio import stdio_server

from .forward import Forwarder, UpstreamLink
from .link import read_through
from .options import ProxyOptions
from .pump import ThreadPump, ThreadWriter, usable
from .upstream import ChildUpstream

__all__ = ["run_stdio", "serve_stdio"]

_FINISH_GRACE = 5.0  # seconds the child has to end after its stdin closed, before its group is ended


def run_stdio(options: ProxyOptions) -> int:
    """Run the stdio-to-stdio proxy described by `options` until stdin ends; return the exit status."""
    if not options.command:
        print("mcpframe proxy: no server command (mcpframe proxy -- command args)", file=sys.stderr)
        return 2
    # The process ends with the run: nothing reads its stdin after it, so the client's pump thread may
    # sleep in `readv` alone (no `poll` before each read: one syscall and GIL hand-off less per call).
    return anyio.run(functools.partial(_serve, options, stdin_reused=False))


async def serve_stdio(options: ProxyOptions) -> int:
    """`run_stdio` inside a running event loop; the process's stdin is left unread when it returns (its
    next chunk is for whoever reads it next)."""
    return await _serve(options, stdin_reused=True)


async def _serve(options: ProxyOptions, *, stdin_reused: bool) -> int:
    links: list[ChildUpstream] = []
    threaded = False

    async def connect() -> UpstreamLink:
        link = await ChildUpstream.start(options.command, options.env, threaded=threaded)
        links.append(link)
        return link

    forwarder = Forwarder(connect, on_upstream_exit=options.on_upstream_exit)
    outcome: dict[str, int] = {}
    try:
        async with stdio_server() as client:
            threaded = _threaded(options, client)
            try:  # a command that cannot run fails now, not at the first request
                await forwarder.ensure_upstream()
            except OSError as exc:
                print(
                    f"mcpframe proxy: cannot run {options.command[0]!r}: {exc.strerror or exc}",
                    file=sys.stderr,
                )
                return 127
            await _forward(
                forwarder,
                client,
                outcome,
                threaded=threaded,
                wakeable=stdin_reused,
                childs_status=options.on_upstream_exit == "exit",
            )
    finally:
        with anyio.CancelScope(shield=True):
            for link in links:
                await link.aclose()
    return outcome.get("status", 0)


def _threaded(options: ProxyOptions, client: FdTransport) -> bool:
    """Whether the thread pump drives this run (`ProxyOptions.pump`)."""
    # `auto` is `thread` by measurement, with either core (benches/README.md, the stdio proxy's round 3).
    return options.pump != "loop" and usable(client.read_fd, client.write_fd)


async def _forward(
    forwarder: Forwarder,
    client: FdTransport,
    outcome: dict[str, int],
    *,
    threaded: bool,
    wakeable: bool,
    childs_status: bool,
) -> None:
    """Forward until stdin ends (and the child with it), the child ends for good, stdout is closed, or a
    signal comes. With `childs_status` the end of stdin leaves the status to the child's exit."""
    writer: ThreadWriter | None = None
    try:
        async with anyio.create_task_group() as group:
            writer = _start(
                forwarder,
                client,
                outcome,
                group,
                threaded=threaded,
                wakeable=wakeable,
                childs_status=childs_status,
            )
    finally:
        if writer is not None:  # a pump thread stuck writing to a client that stopped reading gives up
            with anyio.CancelScope(shield=True):
                await writer.aclose()


def _start(
    forwarder: Forwarder,
    client: FdTransport,
    outcome: dict[str, int],
    group: anyio.abc.TaskGroup,
    *,
    threaded: bool,
    wakeable: bool,
    childs_status: bool,
) -> ThreadWriter | None:
    """Start `_forward`'s tasks in `group`; the client's `ThreadWriter` when the thread pump runs (its
    reader thread `wakeable`: `ThreadPump`)."""

    def gone() -> None:  # nobody reads our stdout any more: the client went away
        outcome.setdefault("status", 0)
        group.cancel_scope.cancel()

    def send_nowait(data: bytes) -> int:
        try:
            return client.send_nowait(data)
        except TransportClosedError:
            gone()
            raise

    async def send(data: bytes) -> None:
        try:
            await client.send(data)
        except TransportClosedError:
            gone()
            raise

    writer = ThreadWriter(client.write_fd, on_broken=gone) if threaded else None
    session = forwarder.open_session(send, send_nowait, writer=writer)

    async def upstream() -> None:
        outcome.setdefault("status", await forwarder.serve())
        group.cancel_scope.cancel()

    async def downstream() -> None:
        if threaded:
            await ThreadPump(
                client.read_fd, session.feed_thread, name="mcpframe-proxy-client", wakeable=wakeable
            ).run()
        else:
            await read_through(client, session.feed_nowait)
        await session.end()
        if not childs_status:  # else `upstream` sets the child's, once it ended
            outcome.setdefault("status", 0)
        await forwarder.finish()
        await anyio.sleep(_FINISH_GRACE)  # `upstream` ends the group first, unless the child hangs
        group.cancel_scope.cancel()

    group.start_soon(upstream)
    group.start_soon(downstream)
    group.start_soon(_signals, group.cancel_scope, outcome)
    return writer


async def _signals(scope: anyio.CancelScope, outcome: dict[str, int]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
        async for signum in received:
            outcome.setdefault("status", 128 + int(signum))
            scope.cancel()
            return
