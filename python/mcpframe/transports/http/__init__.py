"""Streamable HTTP: the server side (`server`, an ASGI app on Starlette served by uvicorn) and the client.

Nothing here is imported by `mcpframe.transports`; the HTTP stack is an optional dependency
(`pip install mcpframe[http]`). Server modules:

- `server`: `StreamableHTTPServer` (the ASGI app and its routes), `serve_http()` (uvicorn on loopback);
- `sessions`: HTTP sessions (`Mcp-Session-Id`), their reaper, and per-POST exchanges;
- `streams`: SSE streams with event ids, priming events, resumption, server-initiated close;
- `events`: the pluggable `EventStore` and its in-memory default;
- `security`: Host/Origin allow-lists and bearer-token verification.
"""
