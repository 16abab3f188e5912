"""Drop-in stdio transports for the official MCP Python SDK (mcp 2.x), built on the mcpframe core.

``stdio_server()`` and ``stdio_client(server_params)`` keep the contract of ``mcp.server.stdio.stdio_server``
and ``mcp.client.stdio.stdio_client``: async context managers yielding ``(read_stream, write_stream)`` of
``SessionMessage`` over zero-buffer memory streams, with invalid frames delivered in-band as exceptions.
What changes is the wire path:

- reads are large binary chunks fed to the core ``Decoder`` (linear reassembly, LF framing, a frame size
  limit: ``max_frame``, else ``limits.max_frame``, 64 MiB unless ``install(max_frame=...)`` changed it),
  not text lines handed over one by one;
- messages are built from the envelope the core has already validated (no second pydantic validation);
- writes take every message that is ready and send them as one write, with no flush per message;
- the server side writes to a private duplicate of fd 1 while fd 1 and ``sys.stdout`` point at stderr
  (``mcpframe.transports.stdio``), so stray prints cannot corrupt the wire;
- the client side spawns and stops the server exactly as the SDK does (its own process helpers: new
  process group, stdin closed first, then the whole process tree terminated).

``mcpframe.compat.install()`` makes the SDK (and every module that imported these names) use them.
"""

from __future__ import annotations

import codecs
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import mcp.client.stdio as _sdk_client
import mcp.server.stdio as _sdk_server
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.client.stdio import StdioServerParameters
from mcp.os.win32.utilities import ServerProcess
from mcp.shared.message import SessionMessage

from mcpframe import core
from mcpframe._unstable import mcp_sdk as unstable
from mcpframe.compat._messages import InvalidFrameError, encode_messages, to_session_item
from mcpframe.transports.base import RECEIVE_CHUNK
from mcpframe.transports.stdio import stdio_server as _fd_stdio_server

__all__ = ["InvalidFrameError", "StdioServerParameters", "stdio_client", "stdio_server"]

logger = logging.getLogger(__name__)

SDK_STDIO_SERVER = _sdk_server.stdio_server
"""The SDK's own server transport (kept for ``uninstall`` and comparisons)."""
SDK_STDIO_CLIENT = _sdk_client.stdio_client
"""The SDK's own client transport (used for non-UTF-8 encodings, kept for ``uninstall``)."""


class _Limits:
    """Settings the SDK's call sites cannot pass (they call ``stdio_server()`` with no arguments)."""

    max_frame: int = core.DEFAULT_MAX_FRAME
    """The frame size limit used when ``max_frame`` is not given."""


limits = _Limits()

Receive = Callable[[], Awaitable[bytes]]
Write = Callable[[bytes], Awaitable[None]]
Sink = unstable.MessageSend[SessionMessage | Exception]
Streams = tuple[unstable.MessageReceive[SessionMessage | Exception], unstable.MessageSend[SessionMessage]]
ServerStreams = Streams
"""What ``stdio_server`` yields: the SDK's context-carrying streams, or anyio's (``mcpframe._unstable``)."""
TransportStreams = Streams
"""What ``stdio_client`` yields: anyio memory streams, or the SDK transport's own for a non-UTF-8 server."""
_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError)


async def _deliver(items: list[Any], sink: Sink) -> None:
    for item in items:
        await sink.send(to_session_item(item))


async def _pump_in(receive: Receive, decoder: core.Decoder, sink: Sink) -> None:
    """Chunks -> decoder -> one ``send`` per message (the rendezvous paces the reading)."""
    try:
        async with sink:
            while data := await receive():
                await _deliver(decoder.feed(data), sink)
            await _deliver(decoder.close(), sink)
    except _GONE:
        await anyio.lowlevel.checkpoint()


def _take_ready(source: MemoryObjectReceiveStream[Any], first: Any) -> list[Any]:
    """``first`` plus every item a sender is already waiting to hand over."""
    batch = [first]
    while True:
        try:
            batch.append(source.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream):
            return batch


async def _pump_out(
    source: MemoryObjectReceiveStream[object], unwrap: Callable[[object], SessionMessage], write: Write
) -> None:
    """Whatever is ready -> one encoded write (no flush per message)."""
    try:
        async with source:
            async for first in source:
                await write(encode_messages([unwrap(item) for item in _take_ready(source, first)]))
    except (*_GONE, OSError) as exc:
        logger.debug("stdio_server: writing to stdout failed: %r", exc)


def _line_reader(stdin: anyio.AsyncFile[str]) -> Receive:
    """Read an explicitly given text stream line by line (its own API offers nothing coarser)."""
    lines = stdin.__aiter__()

    async def receive() -> bytes:
        try:
            line = await lines.__anext__()
        except StopAsyncIteration:
            return b""
        return line.encode("utf-8", "surrogatepass") or b"\n"

    return receive


def _text_writer(stdout: anyio.AsyncFile[str]) -> Write:
    async def write(data: bytes) -> None:
        await stdout.write(data.decode("utf-8"))
        await stdout.flush()

    return write


@asynccontextmanager
async def stdio_server(
    stdin: anyio.AsyncFile[str] | None = None,
    stdout: anyio.AsyncFile[str] | None = None,
    *,
    max_frame: int | None = None,
) -> AsyncIterator[ServerStreams]:
    """Serve MCP over the process's stdin/stdout (drop-in for ``mcp.server.stdio.stdio_server``).

    While serving, protocol output goes to a private duplicate of fd 1 and fd 1 / ``sys.stdout`` point at
    stderr. Explicit ``stdin``/``stdout`` text streams are used as given (no fd protection for them).
    """
    decoder = core.Decoder(max_frame=max_frame or limits.max_frame, batches=False)
    async with AsyncExitStack() as stack:
        receive: Receive
        write: Write
        if stdin is None or stdout is None:
            fds = await stack.enter_async_context(_fd_stdio_server(protect_stdout=stdout is None))
            receive, write = fds.receive, fds.send
        if stdin is not None:
            receive = _line_reader(stdin)
        if stdout is not None:
            write = _text_writer(stdout)
        read_writer, read_stream = unstable.read_streams()
        write_stream, raw_receive, unwrap = unstable.write_streams()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump_in, receive, decoder, read_writer)
            tg.start_soon(_pump_out, raw_receive, unwrap, write)
            yield read_stream, write_stream


class _ClientPipes:
    """The two pipe tasks and the shutdown of one ``stdio_client`` connection."""

    def __init__(self, process: ServerProcess, max_frame: int) -> None:
        self.process = process
        self.decoder = core.Decoder(max_frame=max_frame, batches=False)
        self.read_writer, self.read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.write_stream, self.write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        self.writer_done = anyio.Event()
        self.shutting_down = False

    async def receive(self) -> bytes:
        assert self.process.stdout is not None
        try:
            return await self.process.stdout.receive(RECEIVE_CHUNK)
        except anyio.EndOfStream:
            return b""

    async def reader(self) -> None:
        """Server stdout -> decoder -> read stream; then drain what is left so the server can exit."""
        try:
            async with self.read_writer:
                try:
                    await _pump_in(self.receive, self.decoder, self.read_writer)
                finally:
                    await unstable.drain_stdout(self.process)
        except anyio.ClosedResourceError:
            pass  # our own shutdown closed the pipe under the read
        except (anyio.BrokenResourceError, ConnectionError):
            if not self.shutting_down:
                logger.exception("Reading from the MCP server's stdout failed mid-session")

    async def writer(self) -> None:
        """Write stream -> whatever is ready, encoded -> one write to the server's stdin."""
        assert self.process.stdin is not None
        stdin = self.process.stdin
        try:
            async with self.write_reader:
                async for first in self.write_reader:
                    await stdin.send(encode_messages(_take_ready(self.write_reader, first)))
        except (*_GONE, OSError):
            await self.read_writer.aclose()  # the session sees the end instead of hanging
        finally:
            self.writer_done.set()

    async def shutdown(self) -> None:
        """Stop traffic, let accepted messages out (bounded), stop the server, release the streams."""
        self.read_stream.close()
        self.write_stream.close()
        with anyio.move_on_after(unstable.WRITER_FLUSH_TIMEOUT):
            await self.writer_done.wait()
        await unstable.stop_server_process(self.process)
        for stream in (self.read_stream, self.write_stream, self.read_writer, self.write_reader):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


@asynccontextmanager
async def stdio_client(
    server: StdioServerParameters,
    errlog: TextIO = sys.stderr,
    *,
    max_frame: int | None = None,
) -> AsyncGenerator[TransportStreams, None]:
    """Spawn an MCP server, talk to it over its stdin/stdout (drop-in for ``mcp.client.stdio.stdio_client``).

    A server declared with a non-UTF-8 ``encoding`` is handed to the SDK's own transport (the core speaks
    UTF-8 only). Invalid UTF-8 from the server is an in-band ``InvalidFrameError`` whatever
    ``encoding_error_handler`` says.
    """
    if not _is_utf8(server.encoding):
        async with SDK_STDIO_CLIENT(server, errlog) as streams:
            yield streams
        return
    command = await unstable.executable_command(server.command)
    process = await unstable.open_server_process(
        command, server.args, _sdk_client.get_default_environment() | (server.env or {}), errlog, server.cwd
    )
    pipes = _ClientPipes(
        process, max_frame or limits.max_frame
    )  # no await before the task group: a cancel would leak it
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipes.reader)
        tg.start_soon(pipes.writer)
        try:
            yield pipes.read_stream, pipes.write_stream
        finally:
            pipes.shutting_down = True
            with anyio.CancelScope(shield=True):
                await pipes.shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
