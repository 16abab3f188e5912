"""Transports: byte pipes a Session runs over (memory pairs, fds, stdio, child processes). Bytes only."""

from __future__ import annotations

from mcpframe.transports.base import RECEIVE_CHUNK, Transport, TransportClosedError
from mcpframe.transports.fd import FdTransport
from mcpframe.transports.memory import MemoryTransport, memory_pair
from mcpframe.transports.process import ProcessTransport, spawn
from mcpframe.transports.stdio import stdio_server

__all__ = [
    "RECEIVE_CHUNK",
    "FdTransport",
    "MemoryTransport",
    "ProcessTransport",
    "Transport",
    "TransportClosedError",
    "memory_pair",
    "spawn",
    "stdio_server",
]
