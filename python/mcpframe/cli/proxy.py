"""`mcpframe proxy`: bridge, multiplex or gateway MCP traffic (see docs/proxy.md).

    mcpframe proxy -- python server.py                                  stdio client -> stdio server
    mcpframe proxy --listen http://127.0.0.1:8080/mcp -- python server.py   HTTP/SSE clients -> stdio server
    mcpframe proxy https://host/mcp --header "Authorization: Bearer T"  stdio client -> remote HTTP/SSE
    mcpframe proxy --config servers.json [--listen URL]                 one endpoint, several servers

The argument parsing lives here; each mode is a module of `mcpframe.proxy`, imported when it runs.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast
from urllib.parse import urlsplit

from mcpframe._extras import install_hint

from .http_flags import add_http_flags, bind_hint, http_options, parse_noting_http_flags

__all__ = ["proxy_main"]

_MODES = {
    "gateway": ("mcpframe.proxy.gateway", "run_gateway"),
    "listen": ("mcpframe.proxy.listen", "run_listen"),
    "remote": ("mcpframe.proxy.remote", "run_remote"),
    "stdio": ("mcpframe.proxy.stdio", "run_stdio"),
}

_BIND_ERRORS = (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES)
"""Why binding the --listen address fails: a port in use, an address not on this machine, a port < 1024."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpframe proxy",
        conflict_handler="resolve",  # the HTTP flags' --idle-timeout gives way to the proxy's (below)
        description="Forward MCP traffic between a client and a server that speak different transports, "
        "many clients onto one server, or one endpoint onto several servers.",
        epilog="Put the server's command after '--': mcpframe proxy -- python server.py. With --listen, the "
        "Streamable HTTP flags apply; the host, port and path come from the --listen URL.",
    )
    parser.add_argument(
        "url", nargs="?", default=None, metavar="URL", help="a remote server's endpoint (http:// or https://)"
    )
    parser.add_argument(
        "--listen",
        metavar="URL",
        help="serve clients over Streamable HTTP and the legacy SSE transport at this http:// URL "
        "(default: one client over this process's stdin/stdout)",
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help='gateway: a {"mcpServers": {...}} JSON file'
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="header sent to a remote server (repeatable), e.g. 'Authorization: Bearer TOKEN'",
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="extra environment for the server"
    )
    parser.add_argument(
        "--multiplex",
        choices=("auto", "session", "shared"),
        default="auto",
        help="session: an upstream per client session; shared: many sessions over one upstream; "
        "auto (default): shared for 2026-07-28 traffic, session otherwise",
    )
    add_http_flags(parser, switch="--listen")  # the flags of `mcpframe serve --http`
    parser.add_argument("--pool-size", type=int, default=64, help="most upstream children at once (64)")
    parser.add_argument(
        "--idle-timeout", type=float, default=300.0, help="seconds before an unused upstream child ends (300)"
    )
    parser.add_argument(
        "--on-upstream-exit",
        choices=("restart", "exit"),
        default="restart",
        help="when the server dies: fail its pending requests and restart it on the next request "
        "(default), or exit with its status",
    )
    parser.add_argument(
        "--pump",
        choices=("auto", "loop", "thread"),
        default="auto",
        help="stdio to stdio: a thread per direction (thread: the lowest latency) or the event loop; "
        "auto (default): thread on pipes and sockets",
    )
    return parser


def _pairs(items: Sequence[str], sep: str, flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        name, found, value = item.partition(sep)
        if not found or not name.strip():
            raise ValueError(f"{flag} {item!r}: expected NAME{sep}VALUE")
        pairs[name.strip()] = value.strip() if sep == ":" else value
    return pairs


def _listen_http_options(namespace: argparse.Namespace, http_flags: Sequence[str]) -> object:
    """The `HttpOptions` of `--listen`: its URL's host, port and path, and the HTTP flags given."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    given = [flag for flag in http_flags if flag in ("--host", "--port", "--path")]
    if given:
        raise ValueError(f"{given[0]}: give the host, port and path in the --listen URL")
    url = urlsplit(namespace.listen)
    if url.scheme not in ("http", "https"):  # `--listen 127.0.0.1:8080` would read as a path
        raise ValueError(f"--listen {namespace.listen!r}: expected a URL such as http://127.0.0.1:8080/mcp")
    namespace.host, namespace.path = url.hostname or "127.0.0.1", url.path or "/mcp"
    try:
        namespace.port = url.port or 80
    except ValueError as exc:
        raise ValueError(f"--listen {namespace.listen!r}: {exc}") from None
    try:
        return http_options(namespace)
    except ImportError:
        raise ValueError(f"--listen needs the http extra: {install_hint('http')}") from None


def _check_command_line(
    parser: argparse.ArgumentParser,
    namespace: argparse.Namespace,
    http_flags: Sequence[str],
    extra: Sequence[str],
    command: Sequence[str],
) -> None:
    """Refuse, with what to type instead, a server command without `--` and HTTP flags without `--listen`."""
    url = namespace.url
    unknown = [arg for arg in extra if arg.startswith("-")]
    if unknown:  # `mcpframe proxy uvx --from pkg server`: the command's own flags
        hint = "; a server's command goes after '--'" if not command and url and "://" not in url else ""
        parser.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    if url is not None and "://" not in url:
        if re.match(r"[\w.-]+:\d+(/|$)", url):  # host:port/path
            parser.error(f"{url!r} is not a URL: did you mean http://{url} ?")
        # `mcpframe proxy python server.py`: the command's first word was taken for the URL
        words = shlex.join([url, *extra, *command])
        parser.error(
            f"{url!r} is not a URL; to run a server, put its command after '--': mcpframe proxy -- {words}"
        )
    if extra:
        hint = "" if command else "; a server's command goes after '--'"
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    if namespace.listen is None and http_flags:
        flag = http_flags[0]
        hint = ""
        if url is not None and flag in ("--auth-token", "--auth-jwks", "--auth-introspect"):
            hint = "; to send a token to the remote server: --header 'Authorization: Bearer TOKEN'"
        parser.error(
            f"{flag} is for --listen URL (serving HTTP clients); without --listen it does nothing{hint}"
        )


def _mode(options: object) -> str:
    if getattr(options, "config", None) is not None:
        return "gateway"
    if getattr(options, "listen", None) is not None:
        return "listen"
    return "remote" if getattr(options, "url", None) is not None else "stdio"


def proxy_main(argv: Sequence[str] | None = None) -> int:
    """Run `mcpframe proxy` with `argv` (the arguments after `proxy`); return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in args:
        split = args.index("--")
        args, command = args[:split], args[split + 1 :]
    parser = _parser()
    namespace, http_flags, extra = parse_noting_http_flags(
        parser, args, switch="--listen", keep=("idle_timeout",)
    )
    _check_command_line(parser, namespace, http_flags, extra, command)
    http: object = None
    if namespace.listen is not None:
        try:
            http = _listen_http_options(namespace, http_flags)
        except ValueError as exc:
            parser.error(str(exc))
        if namespace.http_server is not None:  # how serve_http picks its server when not told (env)
            os.environ["MCPFRAME_HTTP_SERVER"] = namespace.http_server
    try:
        from mcpframe.proxy import ProxyOptions  # noqa: PLC0415 - the proxy loads only when it runs

        options = ProxyOptions(
            command=tuple(command),
            url=namespace.url,
            config=namespace.config,
            listen=namespace.listen,
            headers=_pairs(namespace.header, ":", "--header"),
            env=_pairs(namespace.env, "=", "--env"),
            multiplex=namespace.multiplex,
            pool_size=namespace.pool_size,
            idle_timeout=namespace.idle_timeout,
            on_upstream_exit=namespace.on_upstream_exit,
            pump=namespace.pump,
            http=http,
        )
    except ValueError as exc:
        parser.error(str(exc))
    module_name, function = _MODES[_mode(options)]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            print(f"mcpframe proxy: this build has no {_mode(options)} mode ({module_name})", file=sys.stderr)
        else:
            print(
                f"mcpframe proxy: a dependency is missing ({exc}); try: {install_hint('http')}",
                file=sys.stderr,
            )
        return 2
    run = cast(Callable[[object], int], getattr(module, function))
    try:
        return int(run(options))
    except OSError as exc:
        if options.listen is None or exc.errno not in _BIND_ERRORS:
            raise
        hint = bind_hint(
            exc,
            port=_listen_port(options.listen),
            port_flag="another port in the --listen URL",
            host_flag="--listen http://127.0.0.1:PORT/mcp",
        )
        print(f"mcpframe proxy: cannot listen on {options.listen}: {exc}{hint}", file=sys.stderr)
        return 1


def _listen_port(url: str) -> int | None:
    """The port of a `--listen` URL (`None` where it names none or a bad one)."""
    try:
        return urlsplit(url).port
    except ValueError:
        return None
