"""stdio: a server on its own stdin/stdout, with stdout protection.

While ``stdio_server()`` is open the protocol writes to a private duplicate of fd 1, and fd 1 itself (and
``sys.stdout``) point at stderr, so ``print()``, C extensions and child processes that write to stdout cannot
corrupt the wire. Everything is restored on exit. The transport itself is ``FdTransport`` (``fd.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from mcpframe.transports.fd import FdTransport

__all__ = ["stdio_server"]


@asynccontextmanager
async def stdio_server(*, protect_stdout: bool = True) -> AsyncIterator[FdTransport]:
    """The process's own stdin/stdout as a transport, with stdout protection (see the module doc)."""
    with suppress(Exception):
        sys.stdout.flush()
    wire_fd = os.dup(1)
    saved_stdout = sys.stdout
    if protect_stdout:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    transport = FdTransport(0, wire_fd)
    try:
        yield transport
    finally:
        await transport.aclose()
        if protect_stdout:
            with suppress(Exception):
                sys.stdout.flush()
            sys.stdout = saved_stdout
            os.dup2(wire_fd, 1)
        os.close(wire_fd)
