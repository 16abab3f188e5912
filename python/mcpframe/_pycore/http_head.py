"""`plain_request`: a plain HTTP/1.1 request read in one call (`docs/core-contract.md`, "HTTP heads").

The lean HTTP server (`mcpframe.http.wire`) reads a plain request (the common case) with the native
backend's `plain_request` instead of httptools' per-field Python callbacks, and leaves everything else to
httptools from the same byte on. This is the contract's reference: plain `bytes` methods, slower than
httptools (so the server uses httptools alone on this backend), and the oracle of the native one.
"""

from __future__ import annotations

__all__ = ["MAX_PLAIN_HEAD", "PlainRequest", "header_dict", "plain_request"]

MAX_PLAIN_HEAD = 32 * 1024
"""The longest head read (half the lean server's bound on a head, whose count is not a byte count)."""

_MAX_LENGTH_DIGITS = 15  # llhttp's own overflow check is left to it beyond this

_TOKEN = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_URL = b"-._~!$&'()*+,;=:@/?%0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# what a plain head holds: visible characters, blanks, obs-text and CR LF (checked to come in pairs)
_HEAD = bytes([9, 10, 13, *range(32, 127), *range(128, 256)])
_METHODS = {b"GET": "GET", b"POST": "POST", b"DELETE": "DELETE"}

# headers that change how a request is framed or kept: such a request goes to httptools (Connection is
# plain only as `keep-alive`, Content-Length only once and as digits: see `_fields`)
_NOT_PLAIN = frozenset((b"transfer-encoding", b"expect", b"upgrade", b"proxy-connection", b"connection"))

PlainRequest = tuple[str, bytes, list[tuple[bytes, bytes]], bytes, int]
"""A plain request: method, target, headers (names lowercased), body, and where the next request starts."""


def plain_request(data: bytes, start: int, /) -> PlainRequest | None:
    """The plain request (see the contract) whose first byte is `data[start]`, else `None`."""
    if not isinstance(data, bytes):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    if not 0 <= start <= len(data):
        raise ValueError("start is out of range")
    end = data.find(b"\r\n\r\n", start, start + MAX_PLAIN_HEAD)
    lines = _lines(data[start:end]) if end >= 0 else None
    line = _request_line(lines[0]) if lines is not None else None
    fields = _fields(lines[1:]) if lines is not None and line is not None else None
    if line is None or fields is None:
        return None
    headers, length = fields
    end += 4
    if len(data) - end < length:
        return None
    return line[0], line[1], headers, data[end : end + length], end + length


def _lines(head: bytes) -> list[bytes] | None:
    """The head's lines; `None` if it holds a control character, or a CR or LF alone."""
    pairs = head.count(b"\r\n")
    if head.translate(None, _HEAD) or head.count(b"\r") != pairs or head.count(b"\n") != pairs:
        return None
    return head.split(b"\r\n")


def _request_line(line: bytes) -> tuple[str, bytes] | None:
    """The method and target of a plain request line."""
    parts = line.split(b" ")
    if len(parts) != 3 or parts[2] != b"HTTP/1.1":
        return None
    method, target = _METHODS.get(parts[0]), parts[1]
    if method is None or target[:1] != b"/" or target.translate(None, _URL):
        return None
    return method, target


def _fields(lines: list[bytes]) -> tuple[list[tuple[bytes, bytes]], int] | None:
    """The headers of plain header lines, and the Content-Length (0 without one)."""
    headers = []
    length = -1
    for line in lines:
        name, colon, value = line.partition(b":")
        if not name or not colon or name.translate(None, _TOKEN):
            return None
        name = name.lower()
        value = value.lstrip(b" \t")
        if name == b"content-length":
            if length >= 0 or not value.isdigit() or len(value) > _MAX_LENGTH_DIGITS:
                return None
            length = int(value)
        elif name in _NOT_PLAIN and (name != b"connection" or value.lower() != b"keep-alive"):
            return None
        headers.append((name, value))
    return headers, max(length, 0)


def header_dict(headers: list[tuple[bytes, bytes]], /) -> dict[str, str]:
    """`{name: value}` of `(name, value)` bytes pairs, both decoded as Latin-1; the first of a repeated name
    kept (see the contract)."""
    if not isinstance(headers, list):
        raise TypeError("headers must be a list of (bytes, bytes) tuples")
    found: dict[str, str] = {}
    for pair in headers:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError("headers must be a list of (bytes, bytes) tuples")
        name, value = pair
        if not (isinstance(name, bytes) and isinstance(value, bytes)):
            raise TypeError("headers must be a list of (bytes, bytes) tuples")
        key = name.decode("latin-1")
        if key not in found:
            found[key] = value.decode("latin-1")
    return found
