"""mcpframe's proxy: a byte-level MCP bridge, multiplexer and gateway (`mcpframe proxy`).

A host layer on top of the HTTP server and client hosts: it joins a client side (stdio, or Streamable HTTP
and legacy SSE when it listens) to an upstream (a stdio child, a remote HTTP/SSE server, or several of them
behind a gateway config). Frames are forwarded as bytes; only what a rewrite needs is decoded (request ids,
progress tokens, cancelled request ids, a gateway's names).
"""

from __future__ import annotations

from .options import Multiplex, OnUpstreamExit, ProxyOptions

__all__ = ["Multiplex", "OnUpstreamExit", "ProxyOptions"]
