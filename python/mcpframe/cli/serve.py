"""`mcpframe serve TARGET [--http]`: find a server (`cli.target`), serve it on stdio or Streamable HTTP.

An mcpframe `Server` is served directly; an official-SDK `MCPServer` or FastMCP app on the engine drop-in
(`mcpframe.compat.engine`), which one line on stderr says. Anything wrong with the target is one line on
stderr (`cli.failures`) and exit status 2 (the command line) or 1 (the user's code); `--traceback` or
`MCPFRAME_DEBUG=1` adds the whole traceback. Serving that cannot start (the lifespan fails, the `--store`
does not answer) is one line too, before any URL, and exit status 1. Logging goes to stderr; on stdio,
stdout carries the protocol alone, even while the user's module is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from mcpframe._extras import install_hint
from mcpframe.server.lifecycle import GRACE_ENV

from .http_flags import (
    add_http_flags,
    bind_hint,
    http_options,
    http_warnings,
    parse_noting_http_flags,
    ready_callback,
)
from .target import Target, TargetError, load_target
from .verify_flags import wants_verification

if TYPE_CHECKING:
    from mcpframe.server import Server

__all__ = ["load_server", "serve_main"]

_LEVELS = ("debug", "info", "warning", "error", "critical")
_FORMAT = "%(levelname)s %(name)s: %(message)s"


def load_server(spec: str) -> Any:
    """The server `spec` names (an mcpframe `Server` or an SDK app); `TargetError` says why not."""
    return load_target(spec).obj


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpframe serve",
        description="Serve an MCP server: an mcpframe Server, or an official-SDK MCPServer or FastMCP app "
        "(on mcpframe's engine drop-in).",
        epilog="TARGET: server.py, path/to/server.py:NAME, package.module or package.module:NAME. Without "
        "NAME the first of server, mcp, app holding a server is served, else the module's only server. "
        "NAME may be a function returning a server (called with no arguments).",
    )
    parser.add_argument("target", metavar="TARGET", help="what to serve (see below)")
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    transport.add_argument("--http", action="store_true", help="serve Streamable HTTP (the http extra)")
    transport.add_argument(
        "--transport",
        "-t",
        choices=("stdio", "http", "streamable-http"),
        help="the same choice in FastMCP's words",
    )
    parser.add_argument(
        "--log-level",
        type=str.lower,
        choices=_LEVELS,
        default=None,
        help="log to stderr from this level (default: warning, unless your module configures logging)",
    )
    parser.add_argument(
        "--traceback",
        action="store_true",
        default=os.environ.get("MCPFRAME_DEBUG", "") not in ("", "0"),
        help="on an error in your module, print the whole traceback too (also: MCPFRAME_DEBUG=1)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        metavar="SECONDS",
        default=None,
        help="on SIGTERM/SIGINT, how long requests in flight get to finish before they are cancelled "
        "(default: MCPFRAME_SHUTDOWN_GRACE, else 10)",
    )
    add_http_flags(parser)
    return parser


def _configure_logging(level: str | None) -> None:
    """Log to stderr from `level` (default warning) unless logging is configured already.

    Called before the user's module is imported when `--log-level` is given (the flag wins, and what
    the module logs while importing shows), and after it otherwise (the module's own set-up wins).
    """
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(stream=sys.stderr, level=(level or "warning").upper(), format=_FORMAT)
    elif level is not None:
        root.setLevel(level.upper())


def _load(spec: str, *, stdio: bool, show_traceback: bool) -> Target | int:
    """The target, or the exit status after one line on stderr (and the traceback when asked)."""
    # on stdio, a print() while the user's module is imported must not reach the client as a frame
    guard = contextlib.redirect_stdout(sys.stderr) if stdio else contextlib.nullcontext()
    try:
        with guard:
            return load_target(spec)
    except TargetError as exc:
        if show_traceback and exc.cause is not None:
            traceback.print_exception(exc.cause, file=sys.stderr)
        print(exc, file=sys.stderr, flush=True)
        return exc.status


def _start_failed(exc: BaseException, *, show_traceback: bool, prefix: str = "mcpframe serve") -> int:
    """Serving could not start (the lifespan failed, the store does not answer): one line on stderr, the
    traceback of its cause too when asked, and the exit status (1, as for `Server.run()`)."""
    if show_traceback and exc.__cause__ is not None:
        traceback.print_exception(exc.__cause__, file=sys.stderr)
    print(f"{prefix}: {exc}", file=sys.stderr, flush=True)
    return 1


def _serve_http(server: Server, args: argparse.Namespace, options: Any) -> int:
    from mcpframe.http.server import serve_http  # noqa: PLC0415 - the HTTP stack is optional
    from mcpframe.http.store import StoreUnavailable  # noqa: PLC0415
    from mcpframe.server.lifecycle import LifespanError, run_stoppable  # noqa: PLC0415

    level, ready = args.log_level or "warning", ready_callback(options)

    async def main() -> None:
        await serve_http(
            server,
            host=args.host,
            port=args.port,
            options=options,
            ready=ready,
            log_level=level,
            http_server=args.http_server,
        )

    try:  # SIGTERM/SIGINT: uvicorn's graceful stop, the lifespan's teardown, status 0
        anyio.run(lambda: run_stoppable(main))
    except LifespanError as exc:  # worded as `Server.run()` words it on stdio
        return _start_failed(exc, show_traceback=args.traceback, prefix="mcpframe")
    except StoreUnavailable as exc:  # before any URL was printed (serve_http asks the store first)
        return _start_failed(exc, show_traceback=args.traceback)
    return 0


def _serve_sdk(target: Target, args: argparse.Namespace, options: Any) -> int:
    """An SDK or FastMCP app, on the engine drop-in (`mcpframe.compat.engine`)."""
    try:
        from mcpframe.compat import engine  # noqa: PLC0415 - needs the official SDK
    except (ImportError, RuntimeError) as exc:
        print(f"mcpframe serve: {target.where} is {target.kind} app, but {exc}", file=sys.stderr)
        return 1
    article = "an" if target.kind[0] in "AEIOUM" else "a"
    if target.kind == "FastMCP":
        # refused before any start-up line, as one line saying what to do: this is the environment's
        # choice (MCPFRAME_PUBLIC_ONLY, another fastmcp release), not a bug in the user's code
        from mcpframe.compat.engine._server import lowlevel_of  # noqa: PLC0415 - internal, not engine's API

        try:
            lowlevel_of(target.obj)
        except engine.PrivateNamesUnavailable as exc:
            print(
                f"mcpframe serve: {target.where} is {article} {target.kind} app, which mcpframe's engine "
                f"serves only through {exc.runtime}'s private names, off here because {exc.reason}: "
                f"{exc.remedy} ({exc.runtime} run {target.where})",
                file=sys.stderr,
                flush=True,
            )
            return 1
    print(
        f"mcpframe serve: {target.where} is {article} {target.kind} app: serving it on mcpframe's engine "
        "(the mcpframe.compat drop-in)",
        file=sys.stderr,
        flush=True,
    )
    if options is None:
        _hint_on_a_terminal(target)
        engine.serve(target.obj, "stdio")
        return 0
    from mcpframe.http.store import StoreUnavailable  # noqa: PLC0415 - the HTTP stack is optional

    try:
        engine.serve(
            target.obj,
            "http",
            host=args.host,
            port=args.port,
            http_options=options,
            ready=ready_callback(options),
        )
    except StoreUnavailable as exc:  # before any URL was printed, as for an mcpframe Server
        return _start_failed(exc, show_traceback=args.traceback)
    return 0


def _hint_on_a_terminal(target: Target) -> None:
    """Typed at a shell prompt, a stdio server says nothing and waits: say what it waits for.

    An MCP client starts the command with pipes, never a terminal, so it never sees this line (stderr).
    """
    if sys.stdin is not None and sys.stdin.isatty():
        print(
            f"mcpframe serve: {target.where} speaks MCP on stdin/stdout, for an MCP client that starts this "
            "command (docs/running.md); nothing to type here. Ctrl-C stops it; --http serves it over HTTP.",
            file=sys.stderr,
            flush=True,
        )


def _serve(target: Target, args: argparse.Namespace, options: Any) -> int:
    """Serve until the client goes (stdio) or the process is stopped; the exit status."""
    if target.sdk:
        return _serve_sdk(target, args, options)
    if options is None:
        _hint_on_a_terminal(target)
        if args.traceback:  # where `Server.run()` reads it: a lifespan failing at start-up shows it
            os.environ["MCPFRAME_DEBUG"] = "1"
        # hint=False: hinted above. A lifespan failing at start-up: one line, exit status 1 (as `_serve_http`)
        target.obj.run(hint=False)
        return 0
    return _serve_http(target.obj, args, options)


def _options(args: argparse.Namespace, http_flags: Sequence[str]) -> Any:
    """`HttpOptions` for `--http`, `None` for stdio, or the exit status after one line on stderr."""
    if not (args.http or args.transport in ("http", "streamable-http")):
        if args.auth_token_flag is not None or wants_verification(args):
            flag = "--auth-token" if args.auth_token_flag is not None else "--auth-jwks/--auth-introspect"
            print(f"mcpframe serve: {flag} protects HTTP: add --http (stdio has no auth)", file=sys.stderr)
            return 2
        if http_flags:  # `serve app.py --port 8000` would otherwise wait on stdin, saying nothing
            print(
                f"mcpframe serve: {http_flags[0]} is for Streamable HTTP: add --http "
                "(without it the server speaks MCP on stdin/stdout)",
                file=sys.stderr,
            )
            return 2
        return None
    try:
        return http_options(args)
    except ImportError as exc:
        print(f"mcpframe serve: --http needs the http extra ({exc}); {install_hint('http')}", file=sys.stderr)
    except ValueError as exc:
        print(f"mcpframe serve: {exc}", file=sys.stderr)
    return 2


def _set_grace(grace: float | None) -> bool:
    """Put `--grace` where every entry point reads it; False after one line on stderr if it is invalid."""
    if grace is None:
        return True
    if not grace >= 0:  # NaN fails too; inf waits for every request
        print(f"mcpframe serve: --grace must be 0 or more seconds; got {grace:g}", file=sys.stderr)
        return False
    # Server.run, the HTTP host and the engine drop-in all read the environment (lifecycle.shutdown_grace)
    os.environ[GRACE_ENV] = repr(grace)
    return True


def _parse(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The arguments, and the HTTP flags among them (refused without `--http`); exits on a bad one."""
    parser = _parser()
    args, http_flags, extra = parse_noting_http_flags(parser, argv)
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args, http_flags


def serve_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `mcpframe serve`; returns the process exit status."""
    args, http_flags = _parse(argv)
    if not _set_grace(args.grace):
        return 2
    options = _options(args, http_flags)
    if isinstance(options, int):
        return options
    if args.log_level is not None:
        _configure_logging(args.log_level)
    try:
        target = _load(args.target, stdio=options is None, show_traceback=args.traceback)
        if isinstance(target, int):
            return target
        _configure_logging(None)
        if options is not None:
            for warning in http_warnings(args):
                print(f"mcpframe serve: {warning}", file=sys.stderr)
        return _serve(target, args, options)
    except KeyboardInterrupt:  # Ctrl-C while the module imports, or while serving
        return 130
    except OSError as exc:
        if options is None:
            raise
        hint = bind_hint(
            exc,
            port=args.port,
            port_flag="--port N, or --port 0 for a free one",
            host_flag="--host 127.0.0.1",
        )
        print(f"mcpframe serve: cannot listen on {args.host}:{args.port}: {exc}{hint}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(serve_main())
