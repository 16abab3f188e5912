"""Drop-in adapters for the official MCP Python SDK (``mcp`` 2.x).

One line makes an SDK application use mcpframe's stdio transports::

    import mcpframe.compat; mcpframe.compat.install()

After ``install()``, ``mcp.server.stdio.stdio_server`` and ``mcp.client.stdio.stdio_client`` are
``mcpframe.compat.mcp_sdk.stdio_server`` / ``stdio_client``, and so is every already imported module that
took those names with ``from ... import`` (``mcp``, ``mcp.server.mcpserver.server`` for
``MCPServer.run("stdio")``, ``mcp.client.client``, FastMCP's transport modules, your own modules); modules
imported later pick up the drop-ins by themselves. ``uninstall()`` puts the SDK's functions back.

Only mcp 2.x is supported: with any other major version installed (mcp 1.x has a different message
model and no ``mcp_types``), importing ``mcpframe.compat`` raises ``RuntimeError`` naming the version;
``install()`` raises ``ImportError`` when ``mcp`` is not installed at all.

The engine drop-in goes further: ``mcpframe.compat.serve(app)`` serves an SDK ``MCPServer`` or FastMCP
app's own handlers on mcpframe's Server/Session engine (``mcpframe.compat.engine``).
"""

from __future__ import annotations

import importlib
import sys
from importlib import metadata
from typing import Any

from mcpframe._extras import install_hint

__all__ = [
    "SUPPORTED_MCP",
    "engine_server",
    "install",
    "installed",
    "serve",
    "serve_async",
    "uninstall",
]

SUPPORTED_MCP = "mcp>=2,<3"
"""The SDK versions the drop-ins are built for."""

_NAMES = ("stdio_server", "stdio_client")
_DROP_INS = "mcpframe.compat.mcp_sdk"
_ENGINE = "mcpframe.compat.engine"


def _check_mcp_version(*, missing_ok: bool = False) -> None:
    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        if missing_ok:
            return
        raise ImportError(
            f"mcpframe.compat needs the official MCP SDK: {install_hint('sdk')}", name="mcp"
        ) from None
    major = version.split(".", 1)[0]
    if major != "2":
        raise RuntimeError(
            f"mcpframe.compat supports {SUPPORTED_MCP}, but mcp {version} is installed. mcp 1.x uses "
            f"another message model: upgrade to mcp 2 ({install_hint('sdk')}) or leave the SDK's "
            "transports in place."
        )


# Refuse another major version as soon as anything here is imported (``mcp_sdk`` included), before an
# obscure ImportError from inside the SDK could.
_check_mcp_version(missing_ok=True)


def serve(app: Any, transport: str = "stdio", **options: Any) -> None:
    """Serve an SDK server (``MCPServer``, FastMCP, low-level ``Server``) on mcpframe's engine (blocking).

    See ``mcpframe.compat.engine``: the app's handlers run unchanged; mcpframe does the wire.
    """
    importlib.import_module(_ENGINE).serve(app, transport, **options)


async def serve_async(app: Any, transport: Any = "stdio", **options: Any) -> None:
    """``serve`` for a running event loop (``transport``: "stdio", "http" or an mcpframe Transport)."""
    await importlib.import_module(_ENGINE).serve_async(app, transport, **options)


def engine_server(app: Any, **options: Any) -> Any:
    """The mcpframe ``Server`` serving an SDK app's handlers (``mcpframe.compat.engine.engine_server``)."""
    return importlib.import_module(_ENGINE).engine_server(app, **options)


def _pairs() -> list[tuple[Any, Any]]:
    """``(sdk_function, drop_in)`` for each patched name."""
    mcp_sdk = importlib.import_module(_DROP_INS)
    return [
        (mcp_sdk.SDK_STDIO_SERVER, mcp_sdk.stdio_server),
        (mcp_sdk.SDK_STDIO_CLIENT, mcp_sdk.stdio_client),
    ]


def _swap(replacements: dict[int, Any]) -> int:
    """In every loaded module, replace the values named in ``_NAMES`` whose id is a key; count them."""
    count = 0
    for module_name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if module_name == _DROP_INS or not isinstance(namespace, dict):
            continue  # the drop-ins' own module keeps its definitions
        for name in _NAMES:
            value = namespace.get(name)
            if value is not None and id(value) in replacements:
                namespace[name] = replacements[id(value)]
                count += 1
    return count


def install(*, max_frame: int | None = None) -> int:
    """Make the SDK use mcpframe's stdio transports; return how many module bindings were replaced.

    ``max_frame`` sets the frame size limit of every drop-in opened without its own (default 64 MiB; a
    longer frame is delivered in-band as an error, the connection goes on). Idempotent. Raises
    ``RuntimeError`` for an unsupported ``mcp`` version (see the module doc).
    """
    _check_mcp_version()
    if max_frame is not None:
        if max_frame < 1:
            raise ValueError("max_frame must be at least 1")
        importlib.import_module(_DROP_INS).limits.max_frame = max_frame
    return _swap({id(sdk): ours for sdk, ours in _pairs()})


def uninstall() -> int:
    """Put the SDK's own transports back everywhere ``install`` (or a later import) put the drop-ins."""
    if _DROP_INS not in sys.modules:
        return 0
    return _swap({id(ours): sdk for sdk, ours in _pairs()})


def installed() -> bool:
    """Whether ``mcp.server.stdio.stdio_server`` is currently the drop-in."""
    module = sys.modules.get("mcp.server.stdio")
    if module is None or _DROP_INS not in sys.modules:
        return False
    return bool(module.stdio_server is sys.modules[_DROP_INS].stdio_server)
