"""Streamable HTTP: the server side (`server`, a plain ASGI app served by uvicorn) and the client.

Nothing here is imported by `mcpframe.transports`; the HTTP stack is an optional dependency
(`pip install mcpframe[http]`). Server modules:

- `server`: `StreamableHTTPServer` (the ASGI app and its routes), `serve_http()` (uvicorn on loopback);
- `asgi`, `responses`: requests read from the ASGI scope, replies (whole or SSE) written to `send`;
- `handling`, `exchange`: POSTs, answered by reusable lanes (running JSON-RPC Sessions);
- `admission`: flow control: the server-wide bound on requests being answered, its queue, then 503;
- `sessions`: HTTP sessions (`Mcp-Session-Id`), their reaper, their lanes;
- `streams`: SSE streams with event ids, priming events, resumption, server-initiated close;
- `events`: the pluggable `EventStore` and its in-memory default;
- `security`: Host/Origin allow-lists and bearer-token verification.

`connect(url)` makes an MCP `Client` over Streamable HTTP (`_connect`; httpx is imported when it is called).
"""

from mcpframe.http._connect import connect

__all__ = ["connect"]
