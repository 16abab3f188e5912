"""mcpframe: a fast, correct MCP wire layer for Python with a Rust core."""

from __future__ import annotations

from mcpframe import core, errors, jsonrpc, protocol

__all__ = ["__version__", "core", "errors", "jsonrpc", "protocol"]

__version__ = "0.1.0"
