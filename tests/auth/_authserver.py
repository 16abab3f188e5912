"""A tiny OAuth 2.1 authorization server for the tests, on 127.0.0.1 in a thread (stdlib `http.server`).

It signs JWT access tokens (ES256, a key made by `cryptography` when it starts) for the audience
`AUDIENCE`, publishes its JWKS, and implements what the client and the resource server use: metadata (RFC
8414), dynamic registration, the authorization endpoint (which redirects at once, as if the user agreed),
the token endpoint (authorization code with PKCE S256, refresh, client credentials) and introspection
(RFC 7662). Every request is recorded in `requests` for the tests to inspect.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

AUDIENCE = "mcp-test"
SERVICE = ("svc", "svc-secret")  # a confidential client (client credentials)
INTROSPECTOR = ("rs", "rs-secret")  # the resource server, for introspection


class AuthServer:
    """The server's state; `url` is its issuer once `start()`ed."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.kid = "k1"
        self.url = ""
        self.requests: list[tuple[str, str, dict[str, str], dict[str, str]]] = []
        self.clients: dict[str, str | None] = {SERVICE[0]: SERVICE[1]}
        self.codes: dict[str, dict[str, Any]] = {}
        self.refresh_tokens: dict[str, dict[str, Any]] = {}
        self.issued: dict[str, dict[str, Any]] = {}
        self.grantable: set[str] | None = None  # None: every scope asked for is granted
        self.expires_in = 3600
        self._http: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ tokens

    def private_pem(self) -> bytes:
        """The signing key as PKCS#8 PEM."""
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def jwks(self) -> dict[str, Any]:
        """The public key set."""
        jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.key.public_key()))
        jwk.update(kid=self.kid, alg="ES256", use="sig")
        return {"keys": [jwk]}

    def token(self, sub: str, scope: str, *, expires_in: int | None = None, **claims: Any) -> str:
        """A signed access token (claims override the defaults: iss, aud, exp...)."""
        now = int(time.time())
        body = {"iss": self.url, "aud": AUDIENCE, "sub": sub, "scope": scope, "iat": now}
        body["exp"] = now + (self.expires_in if expires_in is None else expires_in)
        body.update(claims)
        token = jwt.encode(body, self.private_pem(), algorithm="ES256", headers={"kid": self.kid})
        self.issued[token] = body
        return token

    def count(self, path: str) -> int:
        """How many requests went to `path`."""
        return sum(1 for _, p, _, _ in self.requests if p == path)

    def forms(self, path: str) -> list[dict[str, str]]:
        """The form (or query) of every request to `path`."""
        return [form for _, p, form, _ in self.requests if p == path]

    # ------------------------------------------------------------------ serving

    def start(self) -> None:
        """Listen on a free port of 127.0.0.1, in a daemon thread."""
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop listening."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 metadata."""
        return {
            "issuer": self.url,
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "registration_endpoint": self.url + "/register",
            "introspection_endpoint": self.url + "/introspect",
            "jwks_uri": self.url + "/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
        }


def _handler(state: AuthServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"state": state})


class _Handler(BaseHTTPRequestHandler):
    state: AuthServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.state.requests.append(("GET", parts.path, query, dict(self.headers)))
        if parts.path == "/.well-known/oauth-authorization-server":
            self._send(200, self.state.metadata())
        elif parts.path == "/jwks":
            self._send(200, self.state.jwks())
        elif parts.path == "/authorize":
            code = secrets.token_urlsafe(8)
            self.state.codes[code] = query
            target = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query.get("state", "")})
            self._send(302, headers={"location": target})
        else:
            self._send(404, {"error": "not_found"})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.headers.get("content-type", "").startswith("application/json"):
            form = json.loads(raw)
        else:
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        self.state.requests.append(("POST", self.path, form, dict(self.headers)))
        if self.path == "/register":
            self._register(form)
        elif self.path == "/token":
            self._token(form)
        elif self.path == "/introspect":
            self._introspect(form)
        else:
            self._send(404, {"error": "not_found"})

    def _basic(self) -> tuple[str, str] | None:
        value = self.headers.get("authorization", "")
        if not value.startswith("Basic "):
            return None
        user, _, password = base64.b64decode(value[6:]).decode().partition(":")
        return user, password

    def _register(self, form: dict[str, Any]) -> None:
        client_id = "dyn-" + secrets.token_hex(4)
        public = form.get("token_endpoint_auth_method") == "none"
        secret = None if public else secrets.token_hex(8)
        self.state.clients[client_id] = secret
        answer = {"client_id": client_id, "redirect_uris": form.get("redirect_uris", [])}
        if secret is not None:
            answer.update(client_secret=secret, token_endpoint_auth_method="client_secret_basic")
        self._send(201, answer)

    def _client(self, form: dict[str, str]) -> str | None:
        basic = self._basic()
        client_id, secret = basic if basic else (form.get("client_id", ""), form.get("client_secret"))
        if client_id not in self.state.clients or self.state.clients[client_id] != secret:
            return None
        return client_id

    def _token(self, form: dict[str, str]) -> None:
        client = self._client(form)
        if client is None:
            self._send(401, {"error": "invalid_client"})
            return
        grant = form.get("grant_type")
        if grant == "authorization_code":
            asked = self.state.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            if asked is None or create_s256_code_challenge(verifier) != asked["code_challenge"]:
                self._send(400, {"error": "invalid_grant"})
                return
            scope = asked.get("scope", "")
        elif grant == "refresh_token":
            held = self.state.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if held is None:
                self._send(400, {"error": "invalid_grant"})
                return
            scope = held["scope"]
        elif grant == "client_credentials":
            scope = form.get("scope", "")
        else:
            self._send(400, {"error": "unsupported_grant_type"})
            return
        granted = [s for s in scope.split() if self.state.grantable is None or s in self.state.grantable]
        refresh = secrets.token_urlsafe(8)
        self.state.refresh_tokens[refresh] = {"scope": " ".join(granted)}
        access = self.state.token(client, " ".join(granted))
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": self.state.expires_in}
        if grant != "client_credentials":
            answer["refresh_token"] = refresh
        self._send(200, answer | {"scope": " ".join(granted)})

    def _introspect(self, form: dict[str, str]) -> None:
        if self._basic() != INTROSPECTOR:
            self._send(401, {"error": "invalid_client"})
            return
        claims = self.state.issued.get(form.get("token", ""))
        if claims is None or claims["exp"] <= time.time():
            self._send(200, {"active": False})
            return
        self._send(200, {"active": True, **claims})
