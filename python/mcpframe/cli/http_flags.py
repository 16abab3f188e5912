"""The operator's flags of `mcpframe serve --http`, and the `HttpOptions` they make.

Defaults are `HttpOptions`' own (see `mcpframe/http/options.py`): loopback Host/Origin allow-lists, HTTP
sessions closed after 1,800 s without a request, at most 10,000 sessions at once. An idle session holds
its connection state, its lane and its event store: ~70 KiB (measured with tracemalloc: 1,000 sessions
left idle after one tool call each hold ~69 MiB), so the default cap bounds idle sessions near 700 MiB;
lower `--max-sessions` (or `--idle-timeout`) on a small machine.

`--auth-token` (or `MCPFRAME_AUTH_TOKEN`, which keeps the token out of `ps`) requires
`Authorization: Bearer <token>` on every request to the endpoint, compared in constant time.
`--auth-jwks` / `--auth-introspect` verify OAuth access tokens against an authorization server instead
(`verify_flags`).
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import os
from collections.abc import Callable, Sequence
from typing import Any

from mcpframe._extras import install_hint
from mcpframe._gc import freeze_startup_heap

from .verify_flags import add_verify_flags, verify_auth, wants_verification

__all__ = [
    "add_http_flags",
    "bind_hint",
    "http_options",
    "http_warnings",
    "parse_noting_http_flags",
    "ready_callback",
]

_ENV_TOKEN = "MCPFRAME_AUTH_TOKEN"
_LOOPBACK = ("localhost", "::1", "[::1]")


def add_http_flags(parser: argparse.ArgumentParser, *, switch: str = "--http") -> None:
    """The HTTP options, in their own groups of `--help`, titled with the flag that turns HTTP on.

    `mcpframe proxy` passes `switch="--listen"`: its URL gives the host, port and path, so those three are
    left out of its help (given anyway, they are refused with that reason); so are the `--store` flags (its
    sessions are child processes that cannot be shared: refused at start with that reason).
    """
    http = parser.add_argument_group(f"Streamable HTTP (with {switch})")
    address = switch == "--http"
    http.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1)" if address else argparse.SUPPRESS,
    )
    http.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port (default 8000; 0 picks a free one)" if address else argparse.SUPPRESS,
    )
    http.add_argument(
        "--path", default="/mcp", help="endpoint path (default /mcp)" if address else argparse.SUPPRESS
    )
    http.add_argument(
        "--auth-token",
        dest="auth_token_flag",
        default=None,
        metavar="TOKEN",
        help=f"require 'Authorization: Bearer TOKEN' (better: set {_ENV_TOKEN}, which ps does not show)",
    )
    http.add_argument(
        "--allow-host",
        "--allowed-host",
        dest="allow_host",
        action="append",
        default=None,
        metavar="HOST",
        help="allowed Host header, host or host:port (repeatable; default: loopback names; '*': any)",
    )
    http.add_argument(
        "--allow-origin",
        "--allowed-origin",
        dest="allow_origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="allowed Origin header, scheme://host[:port] (repeatable; default: loopback origins)",
    )
    http.add_argument(
        "--idle-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="close an HTTP session after this long without a request (default 1800; 0: never)",
    )
    http.add_argument(
        "--max-sessions",
        type=int,
        default=10_000,
        metavar="N",
        help="HTTP sessions at once; past it initialize gets 503 (default 10000; an idle one holds ~70 KiB)",
    )
    http.add_argument(
        "--legacy-sse",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also serve the 2024-11-05 HTTP+SSE transport: GET /sse, POST /messages/ (default: on)",
    )
    _add_tuning(http)
    add_verify_flags(parser, switch=switch)
    _add_scale_out(http, store=address)


def _http_dests(switch: str) -> dict[str, str]:
    """Each HTTP flag's namespace name, mapped to the flag a message names."""
    alone = argparse.ArgumentParser(add_help=False)
    add_http_flags(alone, switch=switch)
    flags = {
        "auth_token_flag": "--auth-token",
        "allow_host": "--allow-host",
        "allow_origin": "--allow-origin",
        "legacy_sse": "--[no-]legacy-sse",
    }
    return {dest: flags.get(dest, "--" + dest.replace("_", "-")) for dest in vars(alone.parse_args([]))}


def parse_noting_http_flags(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    *,
    switch: str = "--http",
    keep: Sequence[str] = (),
) -> tuple[argparse.Namespace, list[str], list[str]]:
    """`parser.parse_known_args(argv)` (the parser has `add_http_flags`), and the HTTP flags `argv` gives.

    Without `switch`, a given HTTP flag would be ignored (`mcpframe serve app.py --port 8000` serves stdio),
    so the command refuses it; an HTTP flag is given when the command line sets it, even to its default.
    `keep` names destinations the command redefined for itself (the proxy's `--idle-timeout`). Returns the
    namespace, the HTTP flags given and the arguments not recognised.
    """
    dests = {dest: flag for dest, flag in _http_dests(switch).items() if dest not in keep}
    # argparse sets no default for a name the namespace already has: None left there means not given
    args, extra = parser.parse_known_args(argv, argparse.Namespace(**dict.fromkeys(dests)))
    given = [flag for dest, flag in dests.items() if getattr(args, dest) is not None]
    for dest in dests:
        if getattr(args, dest) is None:
            setattr(args, dest, parser.get_default(dest))
    return args, given, extra


def _add_scale_out(http: argparse._ArgumentGroup, *, store: bool) -> None:
    def shown(text: str) -> str:
        return text if store else argparse.SUPPRESS

    http.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help=shown(
            "share sessions and SSE events with other instances in Redis: redis://host:port/db "
            "(the redis extra; docs/scale-out.md); default: in this process"
        ),
    )
    http.add_argument(
        "--store-timeout",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help=shown("longest call to the --store; past it the request gets 503 (default 2)"),
    )
    http.add_argument(
        "--store-liveness",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help=shown(
            "with --store: how long an instance that stopped refreshing its keys (it died) still counts as "
            "alive, and holds its GET streams (default 15; at least 3 times --store-timeout)"
        ),
    )
    http.add_argument(
        "--stateless",
        action="store_true",
        help="no sessions for handshake-era clients either: each POST self-contained, no GET stream",
    )


def _add_tuning(http: argparse._ArgumentGroup) -> None:
    http.add_argument(
        "--sse-close-idle",
        type=float,
        default=None,
        metavar="SECONDS",
        help="close POST SSE streams quiet this long; clients resume them (SSE polling)",
    )
    http.add_argument("--retry-ms", type=int, default=1000, help="SSE retry hint (default 1000)")
    http.add_argument(
        "--head-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="a request head must come in whole this long after its first byte, else 408 and the "
        "connection is closed (slow-loris; default 10)",
    )
    http.add_argument(
        "--http-server",
        choices=("uvicorn", "mcpframe"),
        default=None,
        help="the HTTP/1.1 server: uvicorn or mcpframe's own lean one (asyncio + httptools, one write per "
        "answer; docs/transports.md); default: uvicorn for `serve --http`, mcpframe for `proxy --listen` "
        "(or MCPFRAME_HTTP_SERVER)",
    )
    http.add_argument(
        "--response-mode",
        choices=("resumable", "auto", "sse"),
        default="resumable",
        help="how POSTs with requests are answered: resumable SSE streams (default), auto (plain JSON unless "
        "a handler streams), or always SSE",
    )
    http.add_argument(
        "--max-in-flight",
        type=int,
        default=1024,
        metavar="N",
        help="requests answered at once, server-wide; past it POSTs wait (default 1024)",
    )
    http.add_argument(
        "--max-queued",
        type=int,
        default=1024,
        metavar="N",
        help="POSTs that may wait for room; past it: 503 + Retry-After (default 1024)",
    )


def _check(args: argparse.Namespace) -> None:
    """`ValueError` naming the first flag out of range."""
    limits = [
        ("--port", args.port, 0 <= args.port <= 65535, "0 to 65535"),
        ("--idle-timeout", args.idle_timeout, args.idle_timeout >= 0, "0 (never) or more seconds"),
        ("--max-sessions", args.max_sessions, args.max_sessions >= 1, "at least 1"),
        ("--max-in-flight", args.max_in_flight, args.max_in_flight >= 1, "at least 1"),
        ("--max-queued", args.max_queued, args.max_queued >= 0, "0 or more"),
        ("--retry-ms", args.retry_ms, args.retry_ms >= 0, "0 or more"),
        ("--head-timeout", args.head_timeout, args.head_timeout > 0, "more than 0 seconds"),
        ("--store-timeout", args.store_timeout, args.store_timeout > 0, "more than 0"),
    ]
    for flag, value, ok, expected in limits:
        if not ok:
            raise ValueError(f"{flag} {value} is out of range: expected {expected}")


def _check_store(url: str) -> None:
    """`ValueError` for a `--store` that cannot work, said before anything starts listening.

    The store itself is opened when the server starts; a wrong scheme or a missing redis package found
    only then would end the server with a traceback after its URL lines had already been printed.
    """
    scheme = url.partition("://")[0].lower()
    if scheme not in ("redis", "rediss", "unix"):
        raise ValueError(f"--store {url!r}: expected redis://host:port/db (or rediss://, unix://)")
    try:
        import redis.asyncio  # noqa: F401, PLC0415 - the redis extra, only with --store
    except ModuleNotFoundError as exc:
        raise ValueError(f"--store needs the redis extra ({exc}); {install_hint('redis')}") from None


def _token(args: argparse.Namespace) -> str | None:
    token: str | None = args.auth_token_flag
    if token is None:
        token = os.environ.get(_ENV_TOKEN) or None
        source = _ENV_TOKEN
    else:
        source = "--auth-token"
    if token is not None and (not token.strip() or any(c.isspace() for c in token)):
        raise ValueError(f"{source} must be one word with no spaces (a bearer token)")
    return token


def ready_callback(options: Any) -> Callable[[str], None]:
    """What to do once listening: freeze the start-up heap, and say the URL in one line on stderr."""
    from mcpframe.http.server import announce  # noqa: PLC0415 - the http extra, checked before the import

    def ready(url: str) -> None:
        listening = getattr(options.auth, "listening", None)
        if listening is not None:  # a StaticTokenAuth's metadata names the bound URL
            listening.append(url)
        freeze_startup_heap()  # listening: the app, its imports and the HTTP stack exist (see mcpframe._gc)
        announce(url, legacy_sse=getattr(options, "legacy_sse", False))

    return ready


def http_options(args: argparse.Namespace) -> Any:
    """The `HttpOptions` the flags make; `ImportError` without the http extra, `ValueError` for a bad flag."""
    from mcpframe.http.server import HttpOptions  # noqa: PLC0415 - the http extra, checked before the import

    _check(args)
    if args.store is not None:
        _check_store(args.store)
    token = _token(args)
    options = HttpOptions(
        path=args.path,
        allowed_hosts=args.allow_host,
        allowed_origins=args.allow_origin,
        close_idle_streams=args.sse_close_idle,
        retry_ms=args.retry_ms,
        head_timeout=args.head_timeout,
        response_mode=args.response_mode,
        max_in_flight=args.max_in_flight,
        max_queued=args.max_queued,
        idle_timeout=args.idle_timeout or None,
        max_sessions=args.max_sessions,
        legacy_sse=args.legacy_sse,
        store=args.store,
        store_timeout=args.store_timeout,
        store_liveness=args.store_liveness,
        stateless=args.stateless,
    )
    host = f"[{args.host.strip('[]')}]" if ":" in args.host else args.host
    listened = f"http://{host}:{args.port}{args.path}"
    if wants_verification(args):
        options = dataclasses.replace(options, auth=verify_auth(args, listened))
    elif token is not None:
        from .token_auth import static_token_auth  # noqa: PLC0415 - HTTP only

        options = dataclasses.replace(options, auth=static_token_auth(token, listened))
    return options


def http_warnings(args: argparse.Namespace) -> list[str]:
    """What an operator should hear before serving beyond this machine."""
    host = args.host.strip("[]")
    if host in _LOOPBACK or host.startswith("127."):
        return []
    warnings = []
    if args.allow_host is None:
        warnings.append(
            f"listening on {args.host}, but only loopback Host names are accepted (DNS-rebinding "
            "protection): add --allow-host with the name clients use, or --allow-host '*'"
        )
    if args.auth_token_flag is None and not os.environ.get(_ENV_TOKEN) and not wants_verification(args):
        warnings.append(
            f"listening on {args.host} with no authentication: anyone who reaches it can call its tools "
            f"(set {_ENV_TOKEN} or --auth-token)"
        )
    if wants_verification(args) and not args.auth_resource:
        warnings.append(
            f"the resource metadata names http://{args.host}:{args.port}{args.path}, which OAuth clients "
            "refuse unless they connect by that URL: add --auth-resource with the URL clients use"
        )
    return warnings


def bind_hint(exc: OSError, *, port: int | None, port_flag: str, host_flag: str) -> str:
    """What to do when the address cannot be bound, for the usual reasons (empty for any other): `port_flag`
    and `host_flag` say where the user sets them (`--port N`, or the `--listen` URL's port). EACCES is only
    put down to a privileged port when `port` is one (above 1024 it is a policy of the machine's)."""
    if exc.errno == errno.EADDRINUSE:
        return f"; another process listens there: stop it, or choose another port ({port_flag})"
    if exc.errno == errno.EACCES and port is not None and 0 < port < 1024:
        return f"; ports below 1024 need root: choose a port from 1024 up ({port_flag})"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"; no interface of this machine has that address ({host_flag})"
    return ""
