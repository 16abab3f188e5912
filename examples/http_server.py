"""A Streamable HTTP server that wants a bearer token.

    MCP_TOKEN=s3cret python examples/http_server.py --port 8000

It listens on 127.0.0.1 (loopback: only this machine can reach it), prints its URL on stderr, and answers
401 to a request without `Authorization: Bearer s3cret`. Needs the http extra (`pip install '.[http]'`).
`examples/http_client.py` calls it. `mcpframe serve --http` serves any module this way from the command
line (its auth and allowed host/origin flags: `mcpframe serve --help`).

A real deployment verifies tokens issued by an OAuth authorization server (`verify` would check a JWT's
signature or ask the server); the protected resource metadata (RFC 9728) names that server to clients.
"""

from __future__ import annotations

import argparse
import hmac
import os
import sys

import anyio

from mcpframe.http.options import HttpOptions
from mcpframe.http.security import AccessToken, BearerAuth
from mcpframe.http.server import serve_http
from mcpframe.server import Server

server = Server("http-demo", version="1.0.0")


@server.tool
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


def bearer_auth(token: str, url: str) -> BearerAuth:
    """Accept exactly `token` (compared in constant time)."""

    async def verify(presented: str) -> AccessToken | None:
        if hmac.compare_digest(presented.encode(), token.encode()):
            return AccessToken(subject="demo-user")
        return None

    return BearerAuth(verify=verify, resource=url, authorization_servers=["https://auth.example.com"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    token = os.environ.get("MCP_TOKEN")
    if not token:
        sys.exit("http_server.py: set MCP_TOKEN to the token clients must send")
    url = f"http://{args.host}:{args.port}/mcp"
    options = HttpOptions(auth=bearer_auth(token, url))

    def ready(where: str) -> None:
        print(f"listening on {where}", file=sys.stderr, flush=True)

    anyio.run(lambda: serve_http(server, host=args.host, port=args.port, options=options, ready=ready))


if __name__ == "__main__":
    main()
