"""What OAuth costs per request: the client's provider, and the server's token verification.

    python benches/bench_auth.py [--requests 2000] [--rounds 5]

- client: `httpx.AsyncClient` requests to an in-process `MockTransport` (no network, so the difference is
  the auth flow itself) signed three ways: a plain `Authorization` header, `OAuthClientProvider` holding a
  stored token, `ClientCredentialsProvider` likewise;
- server: `JwtVerifier` on one ES256 and one RS256 token with its token cache off (keys held, so the
  signature and claims checks), and on (a token seen before); `IntrospectionVerifier` from its cache.

Rounds are interleaved (every contender once per round), medians of CPU time (`time.process_time`) and
wall time per request in microseconds. Each contender's output is checked before timing.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mcpframe.http.auth import ClientCredentialsProvider, OAuthClientProvider
from mcpframe.http.auth_storage import InMemoryTokenStorage, OAuthToken
from mcpframe.http.security import AccessToken
from mcpframe.http.verify import IntrospectionVerifier, JwtVerifier

Contender = Callable[[int], Awaitable[None]]


def _echo_auth(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, text=request.headers.get("authorization", ""))


async def _noop(url: str) -> None:
    return None


async def _noop_code() -> tuple[str, str | None]:
    return "", None


def client_contenders() -> dict[str, tuple[httpx.AsyncClient, dict[str, str]]]:
    """name -> (client, headers); every one sends `Bearer tok`."""
    transport = httpx.MockTransport(_echo_auth)
    stored = InMemoryTokenStorage(OAuthToken("tok", expires_at=time.time() + 86400))
    code = OAuthClientProvider(
        "http://mcp/mcp",
        redirect_uri="http://127.0.0.1/cb",
        redirect_handler=_noop,
        callback_handler=_noop_code,
        storage=stored,
    )
    machine = ClientCredentialsProvider(
        "http://mcp/mcp", client_id="c", client_secret="s", storage=InMemoryTokenStorage(stored.tokens)
    )
    return {
        "header": (httpx.AsyncClient(transport=transport), {"authorization": "Bearer tok"}),
        "authorization code provider": (httpx.AsyncClient(transport=transport, auth=code), {}),
        "client credentials provider": (httpx.AsyncClient(transport=transport, auth=machine), {}),
    }


def _pem(key: Any) -> bytes:
    return key.private_bytes(  # type: ignore[no-any-return]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _verifier_with(key: Any, alg: str) -> tuple[JwtVerifier, str]:
    """A JwtVerifier whose key set already holds `key`'s public half, and a token it accepts."""
    verifier = JwtVerifier("http://unused/jwks", issuer="https://as", audience="mcp")
    jwk = jwt.PyJWK.from_json(jwt.get_algorithm_by_name(alg).to_jwk(key.public_key()), algorithm=alg)
    verifier._keys = {"k": jwk}
    verifier._fetched_at = time.monotonic()
    claims = {"iss": "https://as", "aud": "mcp", "sub": "u", "scope": "mcp", "exp": int(time.time()) + 3600}
    return verifier, jwt.encode(claims, _pem(key), algorithm=alg, headers={"kid": "k"})


def _uncached(verifier: JwtVerifier) -> JwtVerifier:
    """A verifier holding the same keys with its token cache off: every call checks the signature."""
    twin = JwtVerifier("http://unused/jwks", issuer="https://as", audience="mcp", cache_seconds=0)
    twin._keys, twin._fetched_at = verifier._keys, verifier._fetched_at
    return twin


def server_contenders() -> dict[str, Callable[[], Awaitable[AccessToken | None]]]:
    es, es_token = _verifier_with(ec.generate_private_key(ec.SECP256R1()), "ES256")
    rs, rs_token = _verifier_with(rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")
    introspect = IntrospectionVerifier("http://unused/introspect")
    introspect.cache.put(hashlib.sha256(b"opaque").digest(), AccessToken("u"), time.time())
    es_fresh, rs_fresh = _uncached(es), _uncached(rs)
    return {
        "JwtVerifier ES256, uncached": lambda: es_fresh(es_token),
        "JwtVerifier RS256, uncached": lambda: rs_fresh(rs_token),
        "JwtVerifier ES256 (cached)": lambda: es(es_token),
        "IntrospectionVerifier (cached)": lambda: introspect("opaque"),
    }


async def measure(requests: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Median (cpu, wall) microseconds per request of every contender."""
    clients = client_contenders()
    verifiers = server_contenders()
    for name, (client, headers) in clients.items():  # check before timing
        assert (await client.get("http://mcp/mcp", headers=headers)).text == "Bearer tok", name
    for name, verify in verifiers.items():
        assert await verify() is not None, name
    samples: dict[str, list[tuple[float, float]]] = {n: [] for n in [*clients, *verifiers]}
    for _ in range(rounds):
        for name, (client, headers) in clients.items():
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(requests):
                await client.get("http://mcp/mcp", headers=headers)
            samples[name].append(_per(cpu, wall, requests))
        for name, verify in verifiers.items():
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(requests):
                await verify()
            samples[name].append(_per(cpu, wall, requests))
    for client, _ in clients.values():
        await client.aclose()
    return {
        n: (statistics.median(c for c, _ in s), statistics.median(w for _, w in s))
        for n, s in samples.items()
    }


def _per(cpu: float, wall: float, count: int) -> tuple[float, float]:
    return (time.process_time() - cpu) / count * 1e6, (time.perf_counter() - wall) / count * 1e6


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = anyio.run(measure, args.requests, args.rounds)
    print(f"{'contender':34} {'cpu us/req':>11} {'wall us/req':>12}")
    for name, (cpu, wall) in results.items():
        print(f"{name:34} {cpu:11.1f} {wall:12.1f}")


if __name__ == "__main__":
    main()


def test_bench_auth_smoke() -> None:
    """Tiny run: every contender signs or verifies (checked inside `measure`) and is timed."""
    results = anyio.run(measure, 3, 1)
    assert len(results) == 7
    assert all(cpu >= 0 and wall > 0 for cpu, wall in results.values())
