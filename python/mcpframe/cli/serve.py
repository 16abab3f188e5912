"""`mcpframe serve module:attr [--http]`: load a Server object and serve it on stdio or Streamable HTTP."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

import anyio

from mcpframe._gc import freeze_startup_heap
from mcpframe.server import Server

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
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP (needs mcpframe[http])")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP: port (default 8000; 0 picks one)")
    parser.add_argument("--path", default="/mcp", help="HTTP: endpoint path (default /mcp)")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=None,
        metavar="HOST",
        help="HTTP: allowed Host (repeatable; default: loopback names; '*' disables the check)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="HTTP: allowed Origin (repeatable; default: loopback origins)",
    )
    parser.add_argument(
        "--sse-close-idle",
        type=float,
        default=None,
        metavar="SECONDS",
        help="HTTP: close POST SSE streams quiet this long; clients resume them (SSE polling)",
    )
    parser.add_argument("--retry-ms", type=int, default=1000, help="HTTP: SSE retry hint (default 1000)")
    parser.add_argument(
        "--max-in-flight",
        type=int,
        default=1024,
        metavar="N",
        help="HTTP: requests answered at once, server-wide; past it POSTs wait (default 1024)",
    )
    parser.add_argument(
        "--max-queued",
        type=int,
        default=1024,
        metavar="N",
        help="HTTP: POSTs that may wait for room; past it: 503 + Retry-After (default 1024)",
    )
    return parser


def _serve_http(server: Server, args: argparse.Namespace) -> int:
    try:  # the HTTP stack is optional: imported only when asked for
        from mcpframe.http.server import HttpOptions, serve_http  # noqa: PLC0415
    except ImportError as exc:
        hint = "--http needs the http extra (pip install mcpframe[http])"
        print(f"mcpframe serve: {hint}: {exc}", file=sys.stderr)
        return 2
    options = HttpOptions(
        path=args.path,
        allowed_hosts=args.allow_host,
        allowed_origins=args.allow_origin,
        close_idle_streams=args.sse_close_idle,
        retry_ms=args.retry_ms,
        max_in_flight=args.max_in_flight,
        max_queued=args.max_queued,
    )

    def ready(url: str) -> None:
        freeze_startup_heap()  # listening: the app, its imports and the HTTP stack exist (see mcpframe._gc)
        print(f"mcpframe serve: Streamable HTTP on {url}", file=sys.stderr, flush=True)

    try:
        anyio.run(lambda: serve_http(server, host=args.host, port=args.port, options=options, ready=ready))
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        print(f"mcpframe serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


def serve_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `mcpframe serve`; returns the process exit status."""
    args = _parser().parse_args(argv)
    if args.http and args.stdio:
        print("mcpframe serve: choose one of --stdio and --http", file=sys.stderr)
        return 2
    try:
        server = load_server(args.target)
    except (ImportError, ValueError) as exc:
        print(f"mcpframe serve: {exc}", file=sys.stderr)
        return 2
    if args.http:
        return _serve_http(server, args)
    try:
        server.run()
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(serve_main())
