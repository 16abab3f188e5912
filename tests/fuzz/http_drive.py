"""Drive a Streamable HTTP endpoint with hostile requests, a valid ``tools/call`` after each, and check both.

Hostile requests go over raw sockets (the HTTP framing itself is what is attacked); the valid call goes over a
fresh ``http.client`` connection with the session made at the start. Findings: a 5xx for a client's mistake,
no answer to a complete request, a valid call that fails or hangs, the server process gone.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import random
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from tests.fuzz.mutations import hostile_frame
from tests.fuzz.stdio_drive import Report, rss_kib, valid_call

INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}'
)
VERSION = "2025-06-18"
HELD = 16  # hostile connections kept open at once (slowloris, never-reading clients)


def wait_for_url(stream: IO[bytes], log: IO[bytes], timeout: float = 90.0) -> str:
    """Read the child's stderr until its "Streamable HTTP on URL" line (copying all of it to ``log``)."""
    found: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            log.write(line)
            log.flush()
            if b"Streamable HTTP on " in line:
                found.put(line.decode().rsplit(" ", 1)[-1].strip())

    threading.Thread(target=pump, daemon=True).start()
    return found.get(timeout=timeout)


def sse_or_json(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response body, JSON or SSE."""
    text = body.decode()
    if text.lstrip().startswith(("{", "[")):
        value = json.loads(text)
        return value if isinstance(value, list) else [value]
    out = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            out.append(json.loads(line[5:]))
    return out


class Endpoint:
    """The server's URL, and a session on it for the valid calls."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path or "/"
        self.session = ""

    def post(self, body: bytes, timeout: float) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        try:
            conn.request("POST", self.path, body, headers)
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            conn.close()

    def open(self) -> None:
        status, headers, body = self.post(INIT, 60)
        if status != 200:
            raise RuntimeError(f"initialize got {status}: {body[:300]!r}")
        self.session = headers.get("mcp-session-id", "")
        self.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', 60)


def _request(
    method: bytes, path: bytes, headers: list[bytes], body: bytes, version: bytes = b"HTTP/1.1"
) -> bytes:
    return (
        method
        + b" "
        + path
        + b" "
        + version
        + b"\r\n"
        + b"".join(h + b"\r\n" for h in headers)
        + b"\r\n"
        + body
    )


def hostile_request(rng: random.Random, ep: Endpoint) -> tuple[str, bytes, bool]:  # noqa: C901, PLR0911, PLR0912
    """One hostile HTTP request: (kind, bytes, whether a complete request was sent and an answer is due)."""
    host = f"Host: {ep.host}:{ep.port}".encode()
    path = ep.path.encode()
    sid = f"Mcp-Session-Id: {ep.session}".encode()
    base = [
        host,
        b"Content-Type: application/json",
        b"Accept: application/json, text/event-stream",
        sid,
        f"MCP-Protocol-Version: {VERSION}".encode(),
    ]
    frame = hostile_frame(rng)
    kind = rng.randrange(20)
    if kind < 6:  # a hostile JSON-RPC body, correctly framed
        return "body", _request(b"POST", path, [*base, b"Content-Length: %d" % len(frame)], frame), True
    valid = b'{"jsonrpc":"2.0","id":"h","method":"ping"}'
    cl = b"Content-Length: %d" % len(valid)
    if kind == 6:  # bad, duplicate or huge headers
        extra = rng.choice(
            (
                [b"X: " + b"a" * 200_000],
                [b"Content-Length: 5", cl],
                [cl, cl],
                [b"NoColonHere"],
                [b"X-Nul: a\x00b"],
                [b" folded: x"],
                [b"X: \xff\xfe"],
                [b"Mcp-Session-Id: a", b"Mcp-Session-Id: b"],
                [b"X%d: y" % i for i in range(2000)],
                [b"Content-Length: -1"],
                [b"Content-Length: 99999999999999999999999"],
                [b"Content-Length: 0x10"],
                [b"Transfer-Encoding: chunked", cl],
                [b"Transfer-Encoding: gzip, chunked"],
            )
        )
        body = b"" if b"chunked" in b"".join(extra) else valid
        return "headers", _request(b"POST", path, [*base, *extra], body), bool(body)
    if kind == 7:  # chunked with bad sizes
        chunks = rng.choice(
            (
                b"zz\r\nab\r\n0\r\n\r\n",
                b"-1\r\n\r\n",
                b"ffffffffffffffffff\r\nx\r\n",
                b"5\r\nabc\r\n0\r\n\r\n",
                b"2;ext=1\r\n{}\r\n0\r\n\r\n",
                b"0\r\n",
                b"3\r\n{}",
            )
        )
        return "chunked", _request(b"POST", path, [*base, b"Transfer-Encoding: chunked"], chunks), False
    if kind == 8:  # a body shorter than its Content-Length (the server waits; we give up) or longer
        if rng.random() < 0.5:
            return (
                "short-body",
                _request(b"POST", path, [*base, b"Content-Length: %d" % (len(valid) + 10)], valid),
                False,
            )
        return "long-body", _request(b"POST", path, [*base, cl], valid + b"GARBAGE\r\n\r\n"), True
    if kind == 9:  # pipelined requests
        one = _request(b"POST", path, [*base, cl], valid)
        return "pipelined", one * rng.randint(2, 50), True
    if kind == 10:  # HTTP/1.0, no Host, odd versions
        version = rng.choice((b"HTTP/1.0", b"HTTP/0.9", b"HTTP/2.0", b"HTTP/1.1x", b"FOO"))
        headers = [h for h in base if not h.startswith(b"Host")] if rng.random() < 0.5 else base
        return "version", _request(b"POST", path, [*headers, cl], valid, version), version == b"HTTP/1.0"
    if kind == 11:  # wrong Content-Type or Accept
        ctype = rng.choice(
            (b"text/plain", b"application/x-www-form-urlencoded", b"", b"application/json; charset=latin1")
        )
        headers = [h for h in base if not h.startswith((b"Content-Type", b"Accept"))]
        accept = rng.choice((b"Accept: text/html", b"Accept: */*", b"Accept: application/json"))
        return (
            "content-type",
            _request(b"POST", path, [*headers, b"Content-Type: " + ctype, accept, cl], valid),
            True,
        )
    if kind == 12:  # wrong or absent session id and protocol version
        headers = [h for h in base if not h.startswith((b"Mcp-Session-Id", b"MCP-Protocol"))]
        headers.append(
            rng.choice(
                (
                    b"Mcp-Session-Id: nope",
                    b"Mcp-Session-Id: " + b"x" * 5000,
                    b"Mcp-Session-Id: \x01",
                    b"",
                    sid,
                )
            )
        )
        headers.append(rng.choice((b"MCP-Protocol-Version: 1999-01-01", b"MCP-Protocol-Version: ", b"")))
        return "session", _request(b"POST", path, [h for h in headers if h] + [cl], valid), True
    if kind == 13:  # other methods (DELETE only with a wrong session: the right one would end ours)
        method = rng.choice(
            (b"GET", b"DELETE", b"OPTIONS", b"PUT", b"PATCH", b"HEAD", b"TRACE", b"BREW", b"get")
        )
        headers = [h for h in base if not h.startswith(b"Mcp-Session-Id")] + [b"Mcp-Session-Id: nope"]
        return "method", _request(method, path, headers, b""), True
    if kind == 14:  # odd paths
        odd = rng.choice(
            (
                path + b"%00",
                path + b"/../x",
                b"*",
                b"http://evil/mcp",
                path + b"?a=%ff",
                b"/%2e%2e/",
                path + b"\x00",
                b"/" + b"a" * 100_000,
                path + b"#frag",
            )
        )
        return "path " + odd[:40].decode("latin-1"), _request(b"POST", odd, [*base, cl], valid), True
    if kind == 15:  # bare LF line endings, or garbage instead of a request line
        if rng.random() < 0.5:
            return "bare-lf", _request(b"POST", path, [*base, cl], valid).replace(b"\r\n", b"\n"), False
        return "garbage", bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))) + b"\r\n\r\n", False
    if kind == 16:  # Host/Origin not allowed
        headers = [h for h in base if not h.startswith(b"Host")]
        headers += [
            rng.choice((b"Host: evil.example.com", b"Host: ", b"Host: a:b:c")),
            b"Origin: http://evil.example.com",
        ]
        return "host", _request(b"POST", path, [*headers, cl], valid), True
    if kind == 17:  # slowloris: part of a head, never finished (held open)
        whole = _request(b"POST", path, [*base, cl], valid)
        return "slowloris", whole[: rng.randrange(1, len(whole) - len(valid))], False
    if kind == 18:  # a client that never reads: many requests, no reading (held open)
        one = _request(b"POST", path, [*base, cl], valid)
        return "never-reads", one * 200, False
    # kind 19: a huge body
    big = (
        b'{"jsonrpc":"2.0","id":"h","method":"ping","params":{"x":"'
        + b"a" * rng.choice((10**6, 5 * 10**6))
        + b'"}}'
    )
    return "huge-body", _request(b"POST", path, [*base, b"Content-Length: %d" % len(big)], big), True


def read_status(sock: socket.socket, timeout: float) -> int | None:
    """The status code of the first answer on ``sock``; ``None`` if none came (closed or timed out)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (TimeoutError, ConnectionError):
        pass
    line = data.split(b"\r\n", 1)[0].split()
    if len(line) >= 2 and line[0].startswith(b"HTTP/") and line[1].isdigit():
        return int(line[1])
    return None


def send_hostile(
    ep: Endpoint,
    request: tuple[str, bytes, bool],
    held: list[socket.socket],
    report: Report,
    *,
    step: int,
    incomplete_wait: float,
) -> None:
    """Send one hostile request (``hostile_request``) on a new connection; note what came back."""
    kind, data, complete = request
    sock = socket.create_connection((ep.host, ep.port), timeout=10)
    with contextlib.suppress(ConnectionError, TimeoutError):  # the server closed on us mid-write: an answer
        sock.sendall(data)
    if kind in ("slowloris", "never-reads"):
        held.append(sock)
        if len(held) > HELD:
            held.pop(0).close()
        return
    status = read_status(sock, 10 if complete else incomplete_wait)
    sock.close()
    report.errors[f"{kind} -> {status}"] += 1
    if complete and status is None:
        report.findings.append(f"step {step}: {kind}: no answer to a complete request: {data[:300]!r}")
    if status is not None and status >= 500 and status != 503:
        report.findings.append(f"step {step}: {kind} got {status}: {data[:300]!r}")


def drive_http(
    command: list[str],
    *,
    surface: str,
    seed: int,
    seconds: float,
    max_steps: int = 10**9,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stderr_log: Path,
    answer_timeout: float = 60.0,
    incomplete_wait: float = 1.0,
) -> Report:
    """Start ``command`` (it prints its URL on stderr), then hostile request + valid call, for ``seconds``.

    ``incomplete_wait``: how long to listen for an answer to a request sent incomplete (none is due)."""
    report = Report(surface, seed)
    rng = random.Random(seed)
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    held: list[socket.socket] = []
    start = time.monotonic()
    with open(stderr_log, "wb") as log:
        try:
            assert child.stderr is not None
            ep = Endpoint(wait_for_url(child.stderr, log))
            ep.open()
            report.rss_kib.append(rss_kib(child.pid))
            step = 0
            while time.monotonic() - start < seconds and step < max_steps:
                step += 1
                report.steps = step
                if step % 500 == 0:
                    report.rss_kib.append(rss_kib(child.pid))
                request = hostile_request(rng, ep)
                kind, data, _ = request
                send_hostile(ep, request, held, report, step=step, incomplete_wait=incomplete_wait)
                if not valid_call_ok(ep, step, report, answer_timeout):
                    report.findings.append(f"step {step}: after hostile {kind} {data[:300]!r}")
                    break
                if child.poll() is not None:
                    report.findings.append(
                        f"step {step}: the server exited ({child.returncode}) after {kind}"
                    )
                    break
            report.rss_kib.append(rss_kib(child.pid))
        finally:
            report.seconds = time.monotonic() - start
            for sock in held:
                sock.close()
            child.kill()
            child.wait()
    return report


def valid_call_ok(ep: Endpoint, step: int, report: Report, timeout: float) -> bool:
    """The valid ``tools/call`` after a hostile request: answered, and right."""
    try:
        status, _, raw = ep.post(valid_call(step).rstrip(b"\n"), timeout)
    except (OSError, http.client.HTTPException) as exc:
        report.findings.append(f"step {step}: the valid call failed: {exc!r}")
        return False
    messages = sse_or_json(raw) if status == 200 else []
    answers = [m for m in messages if m.get("id") == f"ok-{step}"]
    text = answers[0].get("result", {}).get("content", [{}])[0].get("text") if answers else None
    if status != 200 or text != str(step + 1):
        report.findings.append(f"step {step}: the valid call got {status} {raw[:300]!r}")
        return False
    return True
