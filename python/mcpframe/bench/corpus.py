"""Deterministic, realistic MCP traffic as NDJSON bytes, for the benchmarks.

Three corpora, each the byte-identical output of a seeded generator (its own splitmix64 generator and
SHAKE-256 for bulk bytes, so no Python version can change them):

- ``small``: 5,000 messages, 0.89 MB, every frame under 1.5 KiB and most under 512 bytes: the chatter
  of a session (``initialize``, ``tools/list``, ``tools/call`` with small arguments and short text results,
  ``notifications/progress``, ``ping``, log messages, cancellations and error responses), in both
  protocol eras (classic handshake and the stateless ``_meta`` style).
- ``mixed``: 2,000 messages, 4.1 MB: the small chatter plus about 12 % medium frames (1 to 32 KiB tool
  results, resource texts, long tool lists) and 1.5 % large ones (64 to 256 KiB).
- ``large``: 32 messages, 16 of them results of 64 KiB to 1 MiB (9.7 MB in all): big text tool
  results, base64 images, long resource texts and blobs, each behind its small request.

``scale`` multiplies the message counts (``--quick`` uses small fractions). Every line is compact JSON
written by ``orjson`` with the envelope keys in encoder order (``jsonrpc``, ``id``, ``method``,
``params``/``result``/``error``), so re-encoding the decoded messages must give the corpus back byte for
byte. :func:`big_frame` builds one ``tools/call`` result of a given size for the per-byte scaling runs.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import orjson

from mcpframe import jsonrpc, protocol
from mcpframe._api import Id

__all__ = ["CORPORA", "Corpus", "CorpusName", "Rng", "big_frame", "build", "kind_of"]

CorpusName = Literal["small", "mixed", "large"]
CORPORA: tuple[CorpusName, ...] = ("small", "mixed", "large")
Ref = tuple[str, Id | None]

_MASK = (1 << 64) - 1
_SEEDS = {"small": 0x5EED_0001, "mixed": 0x5EED_0002, "large": 0x5EED_0003}
_COUNTS = {"small": 5000, "mixed": 2000, "large": 32}
_KIB = 1024

_WORDS = (
    "the",
    "server",
    "returned",
    "a",
    "list",
    "of",
    "files",
    "matching",
    "pattern",
    "in",
    "repository",
    "with",
    "status",
    "ok",
    "error",
    "warning",
    "request",
    "response",
    "tool",
    "call",
    "result",
    "content",
    "text",
    "image",
    "resource",
    "template",
    "prompt",
    "argument",
    "schema",
    "value",
    "weather",
    "forecast",
    "for",
    "city",
    "temperature",
    "humidity",
    "wind",
    "speed",
    "north",
    "south",
    "east",
    "west",
    "build",
    "test",
    "deploy",
    "commit",
    "branch",
    "merge",
    "pull",
    "issue",
    "label",
    "user",
    "account",
    "order",
    "invoice",
    "payment",
    "customer",
    "report",
    "données",
    "résumé",
    "naïve",
    "café",
    "東京",
    "日本語",
    "テキスト",
    "✓",
    "🚀",
    "München",
    "Zürich",
)
_TOOLS = (
    "get_weather",
    "search_files",
    "read_file",
    "run_query",
    "create_issue",
    "list_commits",
    "fetch_url",
)
_LEVELS = ("debug", "info", "notice", "warning", "error")
_MODERN_META = {
    protocol.PROTOCOL_VERSION_KEY: protocol.V2026_07_28,
    protocol.CLIENT_CAPABILITIES_KEY: {"sampling": {}, "elicitation": {}},
}


class Rng:
    """A splitmix64 generator: tiny, fast enough, and fixed forever (unlike ``random``'s helpers)."""

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def next(self) -> int:
        """The next 64-bit value."""
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def between(self, lo: int, hi: int) -> int:
        """An integer in ``[lo, hi]`` (modulo bias is irrelevant here)."""
        return lo + self.next() % (hi - lo + 1)

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.next() < int(p * (1 << 64))

    def pick(self, seq: tuple[str, ...]) -> str:
        """One element of ``seq``."""
        return seq[self.next() % len(seq)]

    def blob(self, n: int) -> bytes:
        """``n`` pseudo-random bytes."""
        return hashlib.shake_256(self.next().to_bytes(8, "little")).digest(n)

    def text(self, n: int) -> str:
        """About ``n`` characters of prose, with newlines and quotes to escape."""
        words: list[str] = []
        size = 0
        while size < n:
            word = self.pick(_WORDS)
            if self.chance(0.04):
                word += ".\n" if self.chance(0.5) else ' "quoted",'
            words.append(word)
            size += len(word) + 1
        return " ".join(words)[:n]


@dataclass(frozen=True)
class Corpus:
    """One corpus: its NDJSON bytes, the messages as dicts, and the reference ``(kind, id)`` list."""

    name: str
    data: bytes
    messages: tuple[dict[str, Any], ...]
    reference: tuple[Ref, ...]

    @property
    def count(self) -> int:
        """Number of messages (one per line)."""
        return len(self.messages)

    @property
    def nbytes(self) -> int:
        """Size in bytes, terminators included."""
        return len(self.data)

    @property
    def sha256(self) -> str:
        """Hex digest of the bytes (the same on every run)."""
        return hashlib.sha256(self.data).hexdigest()


def kind_of(message: dict[str, Any]) -> Ref:
    """The JSON-RPC kind and id of a decoded envelope dict."""
    ident = message.get("id")
    if "method" in message:
        return ("request" if "id" in message else "notification", ident)
    return ("error" if "error" in message else "result", ident)


class _Session:
    """Builds the traffic of one simulated session: requests and their answers, in order."""

    def __init__(self, rng: Rng) -> None:
        self.rng = rng
        self.out: list[dict[str, Any]] = []
        self._next = 0

    def new_id(self) -> Id:
        self._next += 1
        if self.rng.chance(0.15):
            return f"req-{self.rng.next() & 0xFFFFFFFF:08x}-{self._next}"
        return self._next

    def call(self, method: str, params: dict[str, Any] | None, result: Any) -> None:
        ident = self.new_id()
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            request["params"] = params
        self.out.append(request)
        self.out.append({"jsonrpc": "2.0", "id": ident, "result": result})

    def fail(self, method: str, params: dict[str, Any], code: int, message: str) -> None:
        ident = self.new_id()
        self.out.append({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        self.out.append({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        note: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            note["params"] = params
        self.out.append(note)


def _tool_def(rng: Rng, name: str) -> dict[str, Any]:
    props = {
        f"arg_{i}": {"type": rng.pick(("string", "integer", "boolean")), "description": rng.text(40)}
        for i in range(rng.between(1, 4))
    }
    return {
        "name": name,
        "description": rng.text(rng.between(40, 160)),
        "inputSchema": {"type": "object", "properties": props, "required": sorted(props)[:1]},
    }


def _handshake(s: _Session) -> None:
    client = {"name": "bench-client", "version": "1.4.2"}
    caps = {"roots": {"listChanged": True}, "sampling": {}}
    server_caps = {"tools": {"listChanged": True}, "resources": {"subscribe": True}, "logging": {}}
    s.call(
        protocol.INITIALIZE,
        {"protocolVersion": protocol.V2025_11_25, "capabilities": caps, "clientInfo": client},
        {
            "protocolVersion": protocol.V2025_11_25,
            "capabilities": server_caps,
            "serverInfo": {"name": "bench-server", "version": "0.9.0"},
            "instructions": s.rng.text(120),
        },
    )
    s.notify(protocol.NOTIFICATIONS_INITIALIZED)
    s.call(protocol.TOOLS_LIST, {}, {"tools": [_tool_def(s.rng, name) for name in _TOOLS[:3]]})


def _text_result(rng: Rng, size: int) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": rng.text(size)}], "isError": False}


def _small_call(s: _Session) -> None:
    rng = s.rng
    tool = rng.pick(_TOOLS)
    params: dict[str, Any] = {"name": tool, "arguments": {"query": rng.text(rng.between(5, 40))}}
    if rng.chance(0.5):
        params["arguments"]["limit"] = rng.between(1, 100)
    if rng.chance(0.3):
        params["_meta"] = dict(_MODERN_META)
    token = rng.between(1, 1 << 20)
    if rng.chance(0.25):
        params.setdefault("_meta", {})[protocol.PROGRESS_TOKEN] = token
        total = rng.between(2, 4)
        for step in range(1, total + 1):
            s.notify(
                protocol.NOTIFICATIONS_PROGRESS,
                {protocol.PROGRESS_TOKEN: token, "progress": step, "total": total, "message": rng.text(20)},
            )
    s.call(protocol.TOOLS_CALL, params, _text_result(rng, rng.between(16, 300)))


def _small_step(s: _Session) -> None:
    rng = s.rng
    roll = rng.between(0, 99)
    if roll < 55:
        _small_call(s)
    elif roll < 65:
        s.call(protocol.PING, None, {})
    elif roll < 75:
        level = rng.pick(_LEVELS)
        s.notify(protocol.NOTIFICATIONS_MESSAGE, {"level": level, "logger": "bench", "data": rng.text(60)})
    elif roll < 82:
        s.fail(
            protocol.TOOLS_CALL,
            {"name": "no_such_tool", "arguments": {}},
            jsonrpc.INVALID_PARAMS,
            "Unknown tool: no_such_tool",
        )
    elif roll < 87:
        s.notify(
            protocol.NOTIFICATIONS_CANCELLED, {"requestId": rng.between(1, 9999), "reason": "user cancelled"}
        )
    elif roll < 95:
        uri = f"file:///project/src/{rng.pick(_WORDS)}.py"
        s.call(
            protocol.RESOURCES_READ,
            {"uri": uri},
            {"contents": [{"uri": uri, "mimeType": "text/x-python", "text": rng.text(200)}]},
        )
    else:
        s.call(protocol.PROMPTS_GET, {"name": "summarize", "arguments": {"style": "short"}}, {"messages": []})


def _medium_step(s: _Session) -> None:
    rng = s.rng
    roll = rng.between(0, 2)
    if roll == 0:
        s.call(
            protocol.TOOLS_CALL,
            {"name": "read_file", "arguments": {"path": "README.md"}},
            _text_result(rng, rng.between(1 * _KIB, 32 * _KIB)),
        )
    elif roll == 1:
        tools = [_tool_def(rng, f"{rng.pick(_TOOLS)}_{i}") for i in range(rng.between(10, 60))]
        s.call(
            protocol.TOOLS_LIST,
            {"cursor": f"page-{rng.between(1, 9)}"},
            {"tools": tools, "nextCursor": "end"},
        )
    else:
        uri = "file:///project/docs/guide.md"
        text = rng.text(rng.between(2 * _KIB, 24 * _KIB))
        s.call(
            protocol.RESOURCES_READ,
            {"uri": uri},
            {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]},
        )


def _large_step(s: _Session, lo: int, hi: int) -> None:
    rng = s.rng
    size = rng.between(lo, hi)
    roll = rng.between(0, 3)
    if roll == 0:
        s.call(
            protocol.TOOLS_CALL,
            {"name": "fetch_url", "arguments": {"url": "https://example.com/log"}},
            _text_result(rng, size),
        )
    elif roll == 1:
        data = base64.b64encode(rng.blob(size * 3 // 4)).decode("ascii")
        image = {"type": "image", "data": data, "mimeType": "image/png"}
        s.call(
            protocol.TOOLS_CALL,
            {"name": "screenshot", "arguments": {"page": 1}},
            {"content": [{"type": "text", "text": "captured"}, image], "isError": False},
        )
    else:
        uri = f"file:///project/data/{rng.pick(_WORDS)}"
        content: dict[str, Any] = {"uri": uri}
        if roll == 2:
            content.update(mimeType="text/plain", text=rng.text(size))
        else:
            content.update(
                mimeType="application/octet-stream",
                blob=base64.b64encode(rng.blob(size * 3 // 4)).decode("ascii"),
            )
        s.call(protocol.RESOURCES_READ, {"uri": uri}, {"contents": [content]})


def _generate(name: CorpusName, count: int) -> list[dict[str, Any]]:
    session = _Session(Rng(_SEEDS[name]))
    if name != "large":
        _handshake(session)
    while len(session.out) < count:
        if name == "large":
            _large_step(session, 64 * _KIB, 1024 * _KIB)
        elif name == "mixed" and session.rng.chance(0.015):
            _large_step(session, 64 * _KIB, 256 * _KIB)
        elif name == "mixed" and session.rng.chance(0.12):
            _medium_step(session)
        else:
            _small_step(session)
    return session.out[:count]


@lru_cache(maxsize=8)
def build(name: CorpusName, *, scale: float = 1.0) -> Corpus:
    """The corpus ``name`` with ``scale`` times its standard message count (at least 2 messages)."""
    if name not in _COUNTS:
        raise ValueError(f"unknown corpus {name!r}; choose one of {', '.join(CORPORA)}")
    count = max(2, round(_COUNTS[name] * scale))
    messages = _generate(name, count)
    data = b"".join(orjson.dumps(m) + b"\n" for m in messages)
    return Corpus(name, data, tuple(messages), tuple(kind_of(m) for m in messages))


@lru_cache(maxsize=4)
def big_frame(size: int) -> bytes:
    """One ``tools/call`` result frame of about ``size`` bytes (a base64 image), LF-terminated."""
    rng = Rng(size)
    image: dict[str, Any] = {"type": "image", "data": "", "mimeType": "image/png"}
    shell = {"jsonrpc": "2.0", "id": 7, "result": {"content": [image]}}
    room = max(0, size - len(orjson.dumps(shell)))
    data = base64.b64encode(rng.blob(room * 3 // 4 + 3)).decode("ascii")[: room - room % 4]
    image["data"] = data
    return orjson.dumps(shell) + b"\n"
