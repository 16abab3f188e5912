"""`mcpframe serve module:attr`: load a Server object and serve it (stdio for now)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from .app import Server

__all__ = ["load_server", "serve_main"]


def load_server(spec: str) -> Server:
    """The Server named by `module:attr` (`attr` defaults to `server`), importable from the cwd."""
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise ValueError(f"expected module:attr, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    try:
        target = getattr(module, attr or "server")
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr or 'server'!r}") from None
    if callable(target) and not isinstance(target, Server):
        target = target()
    if not isinstance(target, Server):
        raise ValueError(f"{spec} is a {type(target).__name__}, not an mcpframe Server")
    return target


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcpframe serve", description="Serve an mcpframe Server.")
    parser.add_argument("target", help="module:attr naming a Server (or a function returning one)")
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    parser.add_argument("--http", action="store_true", help="Streamable HTTP (not available yet)")
    return parser


def serve_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `mcpframe serve`; returns the process exit status."""
    args = _parser().parse_args(argv)
    if args.http:
        print("mcpframe serve: --http is not implemented yet; serve on stdio (the default)", file=sys.stderr)
        return 2
    try:
        server = load_server(args.target)
    except (ImportError, ValueError) as exc:
        print(f"mcpframe serve: {exc}", file=sys.stderr)
        return 2
    try:
        server.run()
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(serve_main())
