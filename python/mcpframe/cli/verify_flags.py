"""`mcpframe serve --http` as an OAuth resource server: bearer tokens checked against an authorization server.

`--auth-jwks URL` verifies JWT access tokens with the server's key set (`--auth-issuer`, `--auth-audience`
required: a token for another resource must not pass); `--auth-introspect URL` asks the server about each
token (RFC 7662; `--auth-client-id`, and the secret in `MCPFRAME_AUTH_CLIENT_SECRET` or
`--auth-client-secret`). Either way the endpoint answers 401 with `WWW-Authenticate: Bearer
resource_metadata=...` and serves the protected resource metadata (RFC 9728) naming `--auth-server` (the
issuer when not given); `--auth-scope` (repeatable) are the scopes every token needs (else 403
`insufficient_scope`), also listed as `scopes_supported`. `--auth-resource` fixes the resource URL (behind
a reverse proxy); by default it is the URL the server listens on.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from mcpframe._extras import install_hint

__all__ = ["add_verify_flags", "verify_auth", "wants_verification"]

_ENV_SECRET = "MCPFRAME_AUTH_CLIENT_SECRET"


def add_verify_flags(parser: argparse.ArgumentParser, *, switch: str = "--http") -> None:
    """The bearer verification flags, in their own `--help` group titled with the flag that turns HTTP on."""
    group = parser.add_argument_group(f"OAuth bearer verification (with {switch})")
    add = group.add_argument
    add(
        "--auth-jwks",
        metavar="URL",
        help="verify JWT access tokens with this JWKS (needs --auth-issuer/-audience)",
    )
    add("--auth-issuer", metavar="ISS", help="the tokens' issuer (iss); also the default --auth-server")
    add("--auth-audience", metavar="AUD", help="the audience (aud) tokens must name: this server's resource")
    add("--auth-introspect", metavar="URL", help="check tokens with this RFC 7662 introspection endpoint")
    add("--auth-client-id", metavar="ID", help="the client id this server introspects with")
    add(
        "--auth-client-secret",
        metavar="SECRET",
        help=f"its secret (better: set {_ENV_SECRET}, which ps does not show)",
    )
    add(
        "--auth-server",
        action="append",
        metavar="URL",
        help="authorization server named in the resource metadata (repeatable; default: --auth-issuer)",
    )
    add("--auth-scope", action="append", metavar="SCOPE", help="a scope every token needs (repeatable)")
    add("--auth-resource", metavar="URL", help="the resource URL in the metadata (default: the listened URL)")


def wants_verification(args: argparse.Namespace) -> bool:
    """Whether the flags ask for JWKS or introspection verification."""
    return bool(getattr(args, "auth_jwks", None) or getattr(args, "auth_introspect", None))


def _check(args: argparse.Namespace) -> None:
    if args.auth_jwks and args.auth_introspect:
        raise ValueError("--auth-jwks and --auth-introspect are alternatives: give one")
    if args.auth_token_flag is not None:
        raise ValueError("--auth-token and --auth-jwks/--auth-introspect are alternatives: give one")
    if args.auth_jwks and not (args.auth_issuer and args.auth_audience):
        raise ValueError("--auth-jwks needs --auth-issuer and --auth-audience (the tokens' iss and aud)")
    if not (args.auth_server or args.auth_issuer):
        raise ValueError(
            "name the authorization server clients should use: --auth-server URL (or --auth-issuer)"
        )


def verify_auth(args: argparse.Namespace, listened: str) -> Any:
    """The `BearerAuth` the flags ask for (`listened`: the endpoint URL before binding); `ValueError` for
    a bad combination, `ImportError` without the auth extra (JWKS)."""
    from mcpframe.http.security import BearerAuth, ListeningBearerAuth  # noqa: PLC0415 - HTTP only
    from mcpframe.http.verify import IntrospectionVerifier, JwtVerifier  # noqa: PLC0415

    _check(args)
    verifier: Any
    if args.auth_jwks:
        try:
            verifier = JwtVerifier(args.auth_jwks, issuer=args.auth_issuer, audience=args.auth_audience)
        except ModuleNotFoundError as exc:  # PyJWT: the auth extra
            raise ValueError(f"--auth-jwks needs the auth extra ({exc}); {install_hint('auth')}") from None
    else:
        secret = args.auth_client_secret or os.environ.get(_ENV_SECRET) or None
        verifier = IntrospectionVerifier(
            args.auth_introspect,
            client_id=args.auth_client_id,
            client_secret=secret,
            issuer=args.auth_issuer,
            audience=args.auth_audience,
        )
    servers = args.auth_server or [args.auth_issuer]
    scopes = args.auth_scope or ()
    if args.auth_resource:
        return BearerAuth(verifier, args.auth_resource, servers, scopes)
    return ListeningBearerAuth(verifier, listened, servers, scopes)
