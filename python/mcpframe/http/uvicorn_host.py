"""uvicorn's httptools protocol, made to hand the app an absolute-form target's authority as its `Host`.

uvicorn keeps only the path of a target such as `http://evil.example/mcp` (`scope["path"]` and `raw_path`
are `/mcp`) and passes the received `Host` on: the app's Host guard would then check a header RFC 9112
§3.2.2 tells an origin server to ignore, while the request names another host. This protocol swaps the
`host` header lines for the target's authority (`security.target_host`) before uvicorn builds the scope,
as the lean server (`wire.py`) does for its own. (uvicorn's h11 protocol passes such a target whole as
`path`, which matches no route of the app: it is refused there with a 404.)
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .security import target_host

__all__ = ["host_from_target"]


@cache
def host_from_target() -> type[Any] | None:
    """uvicorn's `HttpToolsProtocol` whose requests in absolute-form carry the target's authority as
    `host`; `None` where it cannot be made (no httptools, or a uvicorn whose protocol lacks the hook this
    overrides): uvicorn's own choice then (`"auto"`), as before."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415
    except ImportError:
        return None
    if not callable(getattr(HttpToolsProtocol, "on_headers_complete", None)):
        return None

    class HostFromTarget(HttpToolsProtocol):
        def on_headers_complete(self) -> None:
            """Replace the header lines in place (the scope holds this very list), then uvicorn's step."""
            url, headers = getattr(self, "url", None), getattr(self, "headers", None)
            if isinstance(url, bytes) and isinstance(headers, list):
                found = target_host(url, headers)
                if found is not headers:
                    headers[:] = found
            super().on_headers_complete()

    return HostFromTarget
