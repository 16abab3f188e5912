"""MCP over HTTP, Streamable HTTP and the legacy HTTP+SSE transport (2024-11-05): server and client.

The server side is `server` (a plain ASGI app served by uvicorn).

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
`client_wire` (SSE parsing, the shared `SessionState`, header values), `client_sse` (`SSETransport`: the
legacy HTTP+SSE transport), `client_sse_auto` (`AutoTransport`: the specification's probe, Streamable HTTP
first, then legacy SSE).

Authorization (OAuth 2.1; the `auth` extra): `auth` (the client's `httpx.Auth` providers for
`connect(auth=...)`), `auth_metadata` and `auth_endpoints` (discovery, registration, token requests),
`auth_storage` (`TokenStorage`), `auth_loopback` (the redirect caught on 127.0.0.1), `auth_identity`
(SEP-990); `verify` (the server's JWT and introspection `TokenVerifier`s).

`connect(url)` makes an MCP `Client` for either kind of server (`transport="auto"`, the default, probes;
`"streamable-http"` or `"sse"` pick one), `connect_sse(url)` one for a legacy SSE server (`_connect`; httpx
is imported when they are called).
"""

from mcpframe.http._connect import HttpTransportKind, connect, connect_sse

__all__ = ["HttpTransportKind", "connect", "connect_sse"]
