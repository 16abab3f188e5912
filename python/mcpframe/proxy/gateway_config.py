"""The gateway's config file: `{"mcpServers": {"name": {...}}}`, the shape desktop MCP clients already use.

Each entry is a stdio server (`command`, `args`, `env`, `cwd`) or a remote one (`url`, `headers`); a
`"type"` or `"transport"` key (`stdio`, `http`/`streamable-http`, `sse`) may say which, as some clients
write it. Entries with `"disabled": true` are skipped; other keys clients add (`autoApprove`, `timeout`...)
are ignored. Every mistake is a `ConfigError` naming the file, the server and the key.

Server names become tool and prompt prefixes (`<server>__<tool>`, see `gateway_routes`): letters, digits,
`_` and `-`, not starting or ending with `_` and without `__`, so a prefixed name splits back one way only.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

__all__ = ["ConfigError", "UpstreamKind", "UpstreamSpec", "load_config", "parse_config"]

UpstreamKind = Literal["stdio", "auto", "streamable-http", "sse"]
"""How an upstream is reached: a child's stdio, or HTTP (`auto` probes Streamable HTTP, then legacy SSE)."""

NAME: Final = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")
"""A server name: no leading or trailing `_` and no `__`, so `<server>__<tool>` splits at its first `__`."""

_KINDS: Final[Mapping[str, UpstreamKind]] = {
    "stdio": "stdio",
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamablehttp": "streamable-http",
    "sse": "sse",
}


class ConfigError(ValueError):
    """A gateway config that cannot be used; the message names the file, the server and the key."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class UpstreamSpec:
    """One configured upstream server."""

    name: str
    """The server's name in the config: the prefix of its tools and prompts."""
    kind: UpstreamKind
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Added to the gateway's own environment (not substituted for it)."""
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        """The command line or URL, for messages."""
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args])


def load_config(path: Path) -> list[UpstreamSpec]:
    """Read and check the config at `path`; `ConfigError` says what is wrong and where."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    return parse_config(data, where=str(path))


def parse_config(data: Any, *, where: str = "config") -> list[UpstreamSpec]:
    """The upstreams of a decoded config, in the file's order (that order is also the lists' order)."""
    if not isinstance(data, dict):
        raise ConfigError(f'{where}: expected an object {{"mcpServers": {{...}}}}')
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        raise ConfigError(f'{where}: "mcpServers" must be an object of name -> server')
    specs = []
    for name, entry in servers.items():
        at = f"{where}: mcpServers.{name}"
        if not NAME.fullmatch(name):
            raise ConfigError(
                f"{at}: bad server name {name!r}: use letters, digits, '_' and '-' (no '__', no '_' at "
                "either end): it prefixes the server's tools as <name>__<tool>"
            )
        if not isinstance(entry, dict):
            raise ConfigError(f"{at}: expected an object with a command or a url")
        if entry.get("disabled") is True:
            continue
        specs.append(_entry(name, entry, at))
    if not specs:
        raise ConfigError(f'{where}: "mcpServers" names no (enabled) server')
    return specs


def _entry(name: str, entry: dict[str, Any], at: str) -> UpstreamSpec:
    kind = _kind(entry, at)
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise ConfigError(f"{at}.command: expected the server's program (a non-empty string)")
        if "url" in entry:
            raise ConfigError(f"{at}: give a command or a url, not both")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{at}.cwd: expected a directory (a string)")
        return UpstreamSpec(
            name=name,
            kind=kind,
            command=command,
            args=tuple(_strings(entry.get("args", []), f"{at}.args")),
            env=_table(entry.get("env", {}), f"{at}.env"),
            cwd=cwd,
        )
    url = entry.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{at}.url: expected an http:// or https:// URL, got {url!r}")
    return UpstreamSpec(
        name=name, kind=kind, url=url, headers=_table(entry.get("headers", {}), f"{at}.headers")
    )


def _kind(entry: dict[str, Any], at: str) -> UpstreamKind:
    for key in ("type", "transport"):
        value = entry.get(key)
        if value is None:
            continue
        kind = _KINDS.get(str(value).lower()) if isinstance(value, str) else None
        if kind is None:
            raise ConfigError(f"{at}.{key}: expected 'stdio', 'http' or 'sse', got {value!r}")
        return kind
    if "command" in entry:
        return "stdio"
    if "url" in entry:
        return "auto"
    raise ConfigError(f'{at}: no "command" (a stdio server) and no "url" (a remote server)')


def _strings(value: Any, at: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{at}: expected a list of strings")
    return value


def _table(value: Any, at: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise ConfigError(f"{at}: expected an object of string values")
    return dict(value)
