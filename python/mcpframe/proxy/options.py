"""What a `mcpframe proxy` run is asked to do: one immutable value shared by every mode.

The command line (`mcpframe.cli.proxy`) and the Python API build the same `ProxyOptions`; each mode reads
only the fields it needs. Defaults are the ones a desktop client's server entry expects: forward everything,
restart an upstream that died on the next request, a session per upstream child for handshake-era servers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

__all__ = ["Multiplex", "OnUpstreamExit", "ProxyOptions", "Pump"]

Multiplex = Literal["auto", "session", "shared"]
"""How client sessions map onto upstream connections: `session` gives each client session its own upstream
(a child per session for a command), `shared` carries many sessions over one upstream connection (ids
rewritten), `auto` picks `shared` for 2026-07-28 (stateless) traffic and `session` otherwise."""

Pump = Literal["auto", "loop", "thread"]
"""How the stdio-to-stdio proxy moves bytes: `thread` (a thread per direction blocked in `readv`, plain frames
relayed and written from it: the lowest latency), `loop` (the event loop's readiness callbacks), `auto`
(`thread` on POSIX pipes and sockets, else `loop`)."""

OnUpstreamExit = Literal["restart", "exit"]
"""When an upstream dies: fail its pending requests and start it again on the next request (`restart`), or
fail them and end the proxy with the upstream's status (`exit`)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProxyOptions:
    """One proxy run: where clients come from, where the server is, and how the two are joined.

    Exactly one upstream is named: `command` (a stdio server to spawn), `url` (a remote Streamable HTTP or
    legacy SSE server) or `config` (a gateway's `{"mcpServers": {...}}` file). Clients come over stdio
    unless `listen` is an `http://host:port/path` URL.
    """

    command: Sequence[str] = ()
    """The stdio server to spawn, argv form (`["python", "server.py"]`)."""
    url: str | None = None
    """A remote server's endpoint URL (`https://host/mcp`); the transport is detected (`auto`)."""
    config: Path | None = None
    """A gateway config: `{"mcpServers": {"name": {"command", "args", "env"} | {"url", "headers"}}}`."""
    listen: str | None = None
    """Serve clients over Streamable HTTP (and the legacy SSE transport) at this URL instead of stdio."""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Headers sent to a remote upstream (`Authorization: Bearer ...` among them)."""
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Extra environment for a spawned upstream (added to the proxy's own)."""
    multiplex: Multiplex = "auto"
    pool_size: int = 64
    """At most this many upstream children at once in `session` mode; more sessions wait for one."""
    idle_timeout: float = 300.0
    """Seconds an upstream child without a client session lives before it is reaped."""
    on_upstream_exit: OnUpstreamExit = "restart"
    pump: Pump = "auto"
    """stdio to stdio only: `Pump` (`loop` wherever the thread pump cannot drive the fds)."""
    http: Any = None
    """`mcpframe.http.HttpOptions` for `listen` (Host/Origin allow-lists, tokens, limits); None: defaults."""

    def __post_init__(self) -> None:
        named = sum((bool(self.command), self.url is not None, self.config is not None))
        if named != 1:
            raise ValueError("name exactly one upstream: a command, a url or a config file")
        if self.pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, not {self.pool_size}")
        if self.pump not in ("auto", "loop", "thread"):
            raise ValueError(f"pump must be 'auto', 'loop' or 'thread', not {self.pump!r}")
        if self.idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be positive, not {self.idle_timeout}")
