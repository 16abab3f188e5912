"""A large, varied, seeded MCP corpus generated to a cache file and read back in 64 KiB chunks.

The built-in corpora (:mod:`mcpframe.bench.corpus`) are small enough to sit in the CPU caches and were
written with one encoder; a decoder tuned on them can look better than it is. This one is ~40 MB and
200,000 messages by default: most lines are session chatter (median ~160 bytes) with a long tail of
1-32 KiB results and a few of 100 KiB to 1 MiB. It holds requests of every MCP method, their results,
errors with ``data``, notifications (progress, log, cancelled, every ``list_changed``), tool schemas,
text/image/structured tool results and resource blobs; non-ASCII text (accents, CJK, emoji, combining
marks) and control characters; ids of every class in :data:`ID_CLASSES`, floats with exponents; and
three encoders' styles: orjson's compact UTF-8, ``json.dumps`` with ``ensure_ascii`` (every non-ASCII
character as ``\\uXXXX``, astral ones as surrogate pairs), and ``json.dumps`` with spaces after ``,`` and
``:``. Batches are left out: the current protocol revisions (2025-06-18 on) removed them.

The bytes depend only on the seed, the message count and :data:`VERSION` (the module's own splitmix64
generator, SHAKE-256 for bulk bytes), so a cache file is reused until one of them changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcpframe import protocol
from mcpframe.bench.corpus import Rng

__all__ = [
    "CHUNK",
    "DEFAULT_COUNT",
    "DEFAULT_SEED",
    "ID_CLASSES",
    "VERSION",
    "Generated",
    "cache_dir",
    "chunks",
    "generate",
    "id_class",
    "lines",
    "load",
]

VERSION = 1  # bump when the generator's output changes, so old cache files are not reused
DEFAULT_SEED = 1
DEFAULT_COUNT = 200_000
CHUNK = 64 * 1024
_KIB = 1024

#: Every id class the corpus holds, by name (``id_class`` names the class of one id).
ID_CLASSES = (
    "small",
    "string",
    "2^31",
    "2^53",
    "2^63-1",
    "2^63",
    "2^64-1",
    "beyond 2^64",
    "negative",
)
_BIG_IDS: dict[str, tuple[int, ...]] = {
    "2^31": (2**31 - 1, 2**31, 2**31 + 1),
    "2^53": (2**53 - 1, 2**53, 2**53 + 1),
    "2^63-1": (2**63 - 1,),
    "2^63": (2**63,),
    "2^64-1": (2**64 - 1,),
    "beyond 2^64": (2**64, 10**25, 2**100 + 7),
    "negative": (-1, -(2**63)),
}

_WORDS = (  # noqa: SIM905 (one string reads better than 70 quoted words)
    "the server returned a list of files matching the pattern in repository with status ok error warning "
    "request response tool call result content text image resource template prompt argument schema "
    "value weather forecast city temperature build test deploy commit branch merge issue user order "
    "données résumé naïve café Zürich München Ελληνικά русский 東京 日本語 テキスト 한국어 中文字符 "
    "✓ → 🚀 😀 👩‍💻 🇯🇵 é ñ ü a\u0301 n\u0303 o\u0308 e\u0301\u0327"
).split()
_ODD = ('"quoted"', "back\\slash", "tab\there", "bell\u0007", "nul\u0000", "line\nbreak", "\u2028sep")
_TOOLS = (
    "get_weather",
    "search_files",
    "read_file",
    "run_query",
    "create_issue",
    "list_commits",
    "fetch_url",
)
_LIST_CHANGED = (
    protocol.NOTIFICATIONS_TOOLS_LIST_CHANGED,
    protocol.NOTIFICATIONS_PROMPTS_LIST_CHANGED,
    protocol.NOTIFICATIONS_RESOURCES_LIST_CHANGED,
    protocol.NOTIFICATIONS_ROOTS_LIST_CHANGED,
)


def id_class(ident: object) -> str | None:
    """The :data:`ID_CLASSES` name of a request id (None for a missing id)."""
    if ident is None:
        return None
    if isinstance(ident, str):
        return "string"
    assert isinstance(ident, int)
    for name, values in _BIG_IDS.items():
        if ident in values:
            return name
    return "small"


def _text(rng: Rng, n: int) -> str:
    """About ``n`` characters of multilingual prose, now and then with something to escape."""
    words: list[str] = []
    size = 0
    while size < n:
        word = _ODD[rng.next() % len(_ODD)] if rng.chance(0.03) else _WORDS[rng.next() % len(_WORDS)]
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:n]


def _number(rng: Rng) -> float | int:
    roll = rng.between(0, 3)
    if roll == 0:
        return rng.between(0, 10**6)
    if roll == 1:
        return rng.between(1, 10**6) / 1000
    mantissa = rng.between(1, 10**6) / 10**5
    exponent = rng.between(-300, 300) if roll == 2 else rng.between(-9, 9)
    return float(f"{mantissa}e{exponent}")


def _schema(rng: Rng) -> dict[str, Any]:
    props = {
        f"arg_{i}": {
            "type": rng.pick(("string", "integer", "number", "boolean")),
            "description": _text(rng, 30),
        }
        for i in range(rng.between(1, 4))
    }
    return {"type": "object", "properties": props, "required": sorted(props)[:1]}


def _tool(rng: Rng, name: str) -> dict[str, Any]:
    return {"name": name, "description": _text(rng, rng.between(30, 120)), "inputSchema": _schema(rng)}


def _blob(rng: Rng, size: int) -> str:
    return base64.b64encode(rng.blob(size * 3 // 4)).decode("ascii")


class _Writer:
    """Builds messages in session order; ``out`` is drained by the caller as it goes."""

    def __init__(self, rng: Rng) -> None:
        self.rng = rng
        self.out: list[dict[str, Any]] = []
        self._next = 0

    def new_id(self) -> int | str:
        rng = self.rng
        self._next += 1
        roll = rng.between(0, 99)
        if roll < 70:
            return self._next
        if roll < 88:
            return f"req-{rng.next() & 0xFFFFFFFF:08x}-{self._next}" if rng.chance(0.7) else _text(rng, 12)
        values = _BIG_IDS[rng.pick(tuple(_BIG_IDS))]
        return values[rng.next() % len(values)]

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
        data = {"detail": _text(self.rng, 40), "retryAfter": _number(self.rng), "field": ["params", "name"]}
        error = {"code": code, "message": message, "data": data}
        self.out.append({"jsonrpc": "2.0", "id": ident, "error": error})

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        note: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            note["params"] = params
        self.out.append(note)


def _tool_call(w: _Writer) -> None:
    rng = w.rng
    args: dict[str, Any] = {"query": _text(rng, rng.between(4, 40))}
    if rng.chance(0.5):
        args["limit"] = rng.between(1, 100)
    if rng.chance(0.2):
        args["threshold"] = _number(rng)
    params: dict[str, Any] = {"name": rng.pick(_TOOLS), "arguments": args}
    if rng.chance(0.25):
        token = rng.between(1, 1 << 20) if rng.chance(0.5) else f"tok-{rng.between(1, 999)}"
        params["_meta"] = {protocol.PROGRESS_TOKEN: token}
        total = rng.between(2, 4)
        for step in range(1, total + 1):
            progress = {
                protocol.PROGRESS_TOKEN: token,
                "progress": step,
                "total": total,
                "message": _text(rng, rng.between(16, 56)),
            }
            w.notify(protocol.NOTIFICATIONS_PROGRESS, progress)
    roll = rng.between(0, 9)
    content: list[dict[str, Any]] = [{"type": "text", "text": _text(rng, rng.between(16, 200))}]
    result: dict[str, Any] = {"content": content, "isError": False}
    if roll == 0:
        content.append({"type": "image", "data": _blob(rng, rng.between(200, 2000)), "mimeType": "image/png"})
    elif roll == 1:
        structured = {"temperature": _number(rng), "city": _text(rng, 10), "ok": True, "tags": None}
        result["structuredContent"] = structured
    w.call(protocol.TOOLS_CALL, params, result)


def _resource(w: _Writer) -> None:
    rng = w.rng
    uri = f"file:///project/{rng.pick(('src', 'docs', 'data'))}/{rng.between(1, 999)}.txt"
    roll = rng.between(0, 4)
    if roll == 0:
        w.call(protocol.RESOURCES_SUBSCRIBE, {"uri": uri}, {})
        w.notify(protocol.NOTIFICATIONS_RESOURCES_UPDATED, {"uri": uri})
    elif roll == 1:
        w.call(protocol.RESOURCES_UNSUBSCRIBE, {"uri": uri}, {})
    elif roll == 2:
        item = {"uri": uri, "name": _text(rng, 12), "mimeType": "text/plain"}
        w.call(protocol.RESOURCES_LIST, {}, {"resources": [item] * rng.between(1, 3)})
    elif roll == 3:
        content = {"uri": uri, "mimeType": "text/plain", "text": _text(rng, rng.between(20, 200))}
        w.call(protocol.RESOURCES_READ, {"uri": uri}, {"contents": [content]})
    else:
        blob = {"uri": uri, "mimeType": "application/octet-stream", "blob": _blob(rng, rng.between(60, 400))}
        w.call(protocol.RESOURCES_READ, {"uri": uri}, {"contents": [blob]})


def _other(w: _Writer) -> None:
    roll = w.rng.between(0, 11)
    if roll < 6:
        _client_side(w, roll)
    else:
        _server_side(w, roll)


def _client_side(w: _Writer, roll: int) -> None:
    rng = w.rng
    if roll == 0:
        w.call(protocol.PROMPTS_LIST, {}, {"prompts": [{"name": "summarize", "description": _text(rng, 40)}]})
    elif roll == 1:
        message = {"role": "user", "content": {"type": "text", "text": _text(rng, 60)}}
        w.call(
            protocol.PROMPTS_GET,
            {"name": "summarize", "arguments": {"style": "short"}},
            {"messages": [message]},
        )
    elif roll == 2:
        ref = {"type": "ref/prompt", "name": "summarize"}
        completion = {"values": [_text(rng, 8) for _ in range(3)], "total": 3, "hasMore": False}
        w.call(
            protocol.COMPLETION_COMPLETE,
            {"ref": ref, "argument": {"name": "style", "value": "s"}},
            {"completion": completion},
        )
    elif roll == 3:
        w.call(protocol.LOGGING_SET_LEVEL, {"level": rng.pick(("debug", "info", "warning"))}, {})
    elif roll == 4:
        sample = {"role": "assistant", "content": {"type": "text", "text": _text(rng, 50)}, "model": "m-1"}
        messages = [{"role": "user", "content": {"type": "text", "text": _text(rng, 40)}}]
        w.call(
            protocol.SAMPLING_CREATE_MESSAGE,
            {"messages": messages, "maxTokens": 256, "temperature": 0.7},
            sample,
        )
    elif roll == 5:
        w.call(protocol.ROOTS_LIST, None, {"roots": [{"uri": "file:///project", "name": "project"}]})


def _server_side(w: _Writer, roll: int) -> None:
    rng = w.rng
    if roll == 6:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        w.call(
            protocol.ELICITATION_CREATE,
            {"message": _text(rng, 30), "requestedSchema": schema},
            {"action": "accept", "content": {"ok": True}},
        )
    elif roll == 7:
        w.call(
            protocol.RESOURCES_TEMPLATES_LIST,
            {},
            {"resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "f"}]},
        )
    elif roll == 8:
        w.notify(rng.pick(_LIST_CHANGED))
    elif roll == 9:
        w.notify(protocol.NOTIFICATIONS_CANCELLED, {"requestId": w.new_id(), "reason": _text(rng, 12)})
    else:
        w.fail(
            protocol.TOOLS_CALL,
            {"name": "no_such_tool", "arguments": {}},
            -32602,
            "Unknown tool: no_such_tool",
        )


def _handshake(w: _Writer) -> None:
    caps = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}
    params = {
        "protocolVersion": protocol.V2025_06_18,
        "capabilities": caps,
        "clientInfo": {"name": "gen", "version": "1"},
    }
    server = {"tools": {"listChanged": True}, "resources": {"subscribe": True}, "logging": {}}
    info = {"name": "gen-server", "version": "1"}
    w.call(
        protocol.INITIALIZE,
        params,
        {"protocolVersion": protocol.V2025_06_18, "capabilities": server, "serverInfo": info},
    )
    w.notify(protocol.NOTIFICATIONS_INITIALIZED)
    w.call(protocol.TOOLS_LIST, {}, {"tools": [_tool(w.rng, name) for name in _TOOLS]})


def _big(w: _Writer, lo: int, hi: int) -> None:
    rng = w.rng
    size = rng.between(lo, hi)
    roll = rng.between(0, 3)
    if roll == 0:
        w.call(
            protocol.TOOLS_CALL,
            {"name": "fetch_url", "arguments": {}},
            {"content": [{"type": "text", "text": _text(rng, size)}]},
        )
    elif roll == 1:
        image = {"type": "image", "data": _blob(rng, size), "mimeType": "image/png"}
        w.call(protocol.TOOLS_CALL, {"name": "screenshot", "arguments": {"page": 1}}, {"content": [image]})
    elif roll == 2:
        tools = [_tool(rng, f"{rng.pick(_TOOLS)}_{i}") for i in range(max(1, size // 400))]
        w.call(protocol.TOOLS_LIST, {"cursor": "c"}, {"tools": tools, "nextCursor": "end"})
    else:
        blob = {"uri": "file:///data.bin", "mimeType": "application/octet-stream", "blob": _blob(rng, size)}
        w.call(protocol.RESOURCES_READ, {"uri": "file:///data.bin"}, {"contents": [blob]})


def _step(w: _Writer) -> None:
    rng = w.rng
    roll = rng.between(0, 99_999)
    if roll < 10:  # ~10 per 200,000 messages: the 100 KiB-1 MiB tail
        _big(w, 100 * _KIB, 1024 * _KIB)
    elif roll < 308:
        _big(w, 1 * _KIB, 32 * _KIB)
    elif roll < 55_000:
        _tool_call(w)
    elif roll < 67_000:
        w.call(protocol.PING, None, {})
    elif roll < 79_000:
        level = rng.pick(("debug", "info", "notice", "warning", "error"))
        w.notify(
            protocol.NOTIFICATIONS_MESSAGE,
            {"level": level, "logger": "gen", "data": _text(rng, rng.between(20, 120))},
        )
    elif roll < 90_000:
        _resource(w)
    else:
        _other(w)


def _encode(rng: Rng, message: dict[str, Any]) -> bytes:
    """One line in one of three encoders' styles (orjson cannot write ints beyond 64 bits)."""
    roll = rng.between(0, 19)
    if roll == 0:
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"
    if roll == 1:
        return json.dumps(message, ensure_ascii=False, separators=(", ", ": ")).encode() + b"\n"
    try:
        return orjson.dumps(message) + b"\n"
    except orjson.JSONEncodeError:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def lines(seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT) -> Iterator[bytes]:
    """The corpus's ``count`` lines (each LF-terminated), generated lazily."""
    rng = Rng(seed * 0x9E3779B97F4A7C15 + 0x51_7EED)
    writer = _Writer(rng)
    _handshake(writer)
    done = 0
    while done < count:
        if not writer.out:
            _step(writer)
        for message in writer.out[: count - done]:
            yield _encode(rng, message)
            done += 1
        writer.out.clear()


@dataclass(frozen=True)
class Generated:
    """A generated corpus on disk: where, its size, message count and digest."""

    path: Path
    seed: int
    count: int
    nbytes: int
    sha256: str


def cache_dir() -> Path:
    """``$MCPFRAME_BENCH_CACHE``, else ``$XDG_CACHE_HOME/mcpframe/bench``, else ``~/.cache/...``."""
    explicit = os.environ.get("MCPFRAME_BENCH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcpframe" / "bench"


def generate(path: Path, seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT) -> Generated:
    """Write the corpus to ``path`` (through a temporary file, so a crash leaves no half corpus)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    partial = path.with_name(path.name + f".{os.getpid()}.part")
    with partial.open("wb") as out:
        for line in lines(seed, count):
            out.write(line)
            digest.update(line)
            size += len(line)
    os.replace(partial, path)
    made = Generated(path, seed, count, size, digest.hexdigest())
    meta = {"version": VERSION, "seed": seed, "count": count, "bytes": size, "sha256": made.sha256}
    path.with_suffix(".json").write_text(json.dumps(meta) + "\n", encoding="utf-8")
    return made


def load(seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT, folder: Path | None = None) -> Generated:
    """The cached corpus for ``seed`` and ``count``, generated first if missing or stale."""
    path = (folder or cache_dir()) / f"corpus-v{VERSION}-seed{seed}-n{count}.ndjson"
    try:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        if meta["version"] == VERSION and path.stat().st_size == meta["bytes"]:
            return Generated(path, seed, count, meta["bytes"], meta["sha256"])
    except (OSError, ValueError, KeyError):
        pass  # missing or unreadable: generate it again
    return generate(path, seed, count)


def chunks(path: Path, size: int = CHUNK, limit: int | None = None) -> Iterator[bytes]:
    """The file in ``size``-byte chunks (the first ``limit`` bytes only, if given)."""
    left = limit if limit is not None else -1
    with path.open("rb") as source:
        while left != 0:
            piece = source.read(size if left < 0 else min(size, left))
            if not piece:
                return
            left -= len(piece) if left > 0 else 0
            yield piece
