"""Streamable HTTP: the server side (`server`, a plain ASGI app served by uvicorn) and the client.

A host layer: it sits above `server` and `client` and nothing below imports it; the HTTP stack is an
optional dependencies (the `http` extra: `pip install '.[http]'` in a clone). Shared by both sides:

- `options`: `HttpOptions` (server) and `HttpClientOptions` (client), frozen, one field per knob;
- `headers`: the header names the binding adds (one list), Accept/Content-Type, the mirror headers.

Server modules (`StreamableHTTPServer` composes them; each piece gets only the objects it uses):

- `server`: `StreamableHTTPServer` (the ASGI app and its routes), `serve_http()` (uvicorn on loopback);
- `asgi`, `responses`: requests read from the ASGI scope, replies (whole or SSE, `StreamReplies`);
- `handling`, `post`, `exchange`: POSTs (`PostHandler`), their bodies, the reusable lanes answering them;
- `admission`: flow control: the server-wide bound on requests being answered, its queue, then 503;
- `sessions`: HTTP sessions (`Mcp-Session-Id`), their reaper, their lanes;
- `streams`, `pipe`: SSE streams with event ids, priming events, resumption, server-initiated close;
- `events`: the pluggable `EventStore` and its in-memory default;
- `security`: Host/Origin allow-lists and bearer-token verification.

Client modules: `client` (`StreamableHTTPTransport`), `client_answers` (its `AnswerReader` and `Inbox`),
`client_wire` (SSE parsing, the shared `SessionState`, header values).

`connect(url)` makes an MCP `Client` over Streamable HTTP (`_connect`; httpx is imported when it is called).
"""

from mcpframe.http._connect import connect

__all__ = ["connect"]
