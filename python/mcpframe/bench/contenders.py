"""The contenders: each turns a corpus into a timed zero-argument callable and checks that call's output.

Decoders take the whole NDJSON buffer and must produce one message per line with the reference kind and
id; encoders take the corpus messages as dicts and must give the corpus bytes back. A contender whose
library or backend does not import is kept, marked unavailable with the reason.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

import msgspec
import orjson

from mcpframe.bench.corpus import Corpus, Ref, kind_of
from mcpframe.core import load_backend

__all__ = ["Contender", "Op", "backend_status", "decoders", "encoders"]

Op = Literal["decode", "encode"]
Timed = Callable[[], Any]

_SDK_KINDS = {
    "JSONRPCRequest": "request",
    "JSONRPCNotification": "notification",
    "JSONRPCResponse": "result",
    "JSONRPCError": "error",
}


@dataclass(frozen=True)
class Contender:
    """One way of decoding or encoding a corpus."""

    key: str
    label: str
    op: Op
    make: Callable[[Corpus, int], Timed] | None
    check: Callable[[Corpus, Any], str | None]
    unavailable: str | None = None
    streaming: bool = False

    def prepare(self, corpus: Corpus, chunk: int) -> Timed:
        """The timed callable for ``corpus`` (``chunk`` is the feed size of streaming decoders)."""
        if self.make is None:
            raise RuntimeError(f"{self.label} is unavailable: {self.unavailable}")
        return self.make(corpus, chunk)


def _load(name: str) -> tuple[ModuleType | None, str | None]:
    try:
        return load_backend(name), None
    except Exception as exc:  # any failure means "not usable here", with the reason shown
        return None, f"{type(exc).__name__}: {exc}"


def backend_status() -> dict[str, str]:
    """``{"native": "available" | reason, "python": ...}``."""
    return {name: _load(name)[1] or "available" for name in ("native", "python")}


def _first_mismatch(got: Sequence[Ref], want: Sequence[Ref]) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} messages, expected {len(want)}"
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        if g != w:
            return f"message {index}: got {g!r}, expected {w!r}"
    return None


def _payload(message: dict[str, Any]) -> Any:
    for member in ("params", "result", "error"):
        if member in message:
            return message[member]
    return None


def _check_mcpframe(lazy: bool) -> Callable[[Corpus, Any], str | None]:
    def check(corpus: Corpus, output: list[Any]) -> str | None:
        refs = [(m.kind, m.id) if hasattr(m, "kind") else ("FrameError", m.message) for m in output]
        problem = _first_mismatch(refs, corpus.reference)
        if problem is not None:
            return problem
        for index, (msg, want) in enumerate(zip(output, corpus.messages, strict=True)):
            if msg.lazy is not lazy:
                return f"message {index}: lazy={msg.lazy}, expected {lazy}"
            got = msg.error if msg.kind == "error" else msg.result if msg.kind == "result" else msg.params
            if got != _payload(want):
                return f"message {index}: decoded payload differs from the corpus"
        return None

    return check


def _mcpframe_decoder(backend: str, lazy: bool) -> Contender:
    mod, reason = _load(backend)
    key = f"{backend}-{'lazy' if lazy else 'eager'}"
    label = f"mcpframe {backend} ({'lazy' if lazy else 'eager'})"

    def make(corpus: Corpus, chunk: int) -> Timed:
        assert mod is not None
        decoder_cls = mod.Decoder
        view = memoryview(corpus.data)
        chunks = [bytes(view[i : i + chunk]) for i in range(0, len(view), chunk)]

        def run() -> list[Any]:
            decoder = decoder_cls(lazy=lazy)
            out: list[Any] = []
            for piece in chunks:
                out += decoder.feed(piece)
            out += decoder.close()
            return out

        return run

    return Contender(key, label, "decode", make if mod else None, _check_mcpframe(lazy), reason, True)


def _orjson_decoder() -> Contender:
    def make(corpus: Corpus, chunk: int) -> Timed:
        data = corpus.data
        loads = orjson.loads
        return lambda: [loads(line) for line in data.split(b"\n") if line]

    def check(corpus: Corpus, output: list[dict[str, Any]]) -> str | None:
        problem = _first_mismatch([kind_of(m) for m in output], corpus.reference)
        if problem is None and output != list(corpus.messages):
            problem = "decoded values differ from the corpus"
        return problem

    return Contender("orjson", "orjson.loads per line", "decode", make, check)


class _Envelope(msgspec.Struct):
    """A typed JSON-RPC envelope whose payloads stay undecoded (``msgspec.Raw``)."""

    jsonrpc: Literal["2.0"]
    id: int | str | msgspec.UnsetType | None = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


def _envelope_ref(env: _Envelope) -> Ref:
    ident = None if env.id is msgspec.UNSET else env.id
    if env.method is not msgspec.UNSET:
        return ("notification" if env.id is msgspec.UNSET else "request", ident)
    return ("error" if len(env.error) else "result", ident)


def _msgspec_decoder(per_line: bool) -> Contender:
    decoder = msgspec.json.Decoder(_Envelope)

    def make(corpus: Corpus, chunk: int) -> Timed:
        data = corpus.data
        if per_line:
            decode = decoder.decode
            return lambda: [decode(line) for line in data.split(b"\n") if line]
        return lambda: decoder.decode_lines(data)

    def check(corpus: Corpus, output: list[_Envelope]) -> str | None:
        return _first_mismatch([_envelope_ref(env) for env in output], corpus.reference)

    if per_line:
        return Contender("msgspec-raw-line", "msgspec Struct + Raw per line", "decode", make, check)
    return Contender("msgspec-raw", "msgspec Struct + Raw (decode_lines)", "decode", make, check)


def _sdk_decoder() -> Contender:
    try:  # imported here: the SDK is an optional dependency
        jsonrpc_message_adapter = importlib.import_module("mcp.types").jsonrpc_message_adapter
    except Exception as exc:  # the SDK is optional (the "bench" extra)
        reason = f"{type(exc).__name__}: {exc}"
        return Contender(
            "mcp-sdk", "mcp SDK validate_json per line", "decode", None, lambda c, o: None, reason
        )
    validate = jsonrpc_message_adapter.validate_json

    def make(corpus: Corpus, chunk: int) -> Timed:
        # What mcp 2.x stdio does per line: UTF-8 text (errors="replace"), then the message TypeAdapter.
        data = corpus.data

        def run() -> list[Any]:
            lines = data.decode("utf-8", "replace").split("\n")
            return [validate(line, by_name=False) for line in lines if line]

        return run

    def check(corpus: Corpus, output: list[Any]) -> str | None:
        refs = [(_SDK_KINDS.get(type(m).__name__, type(m).__name__), getattr(m, "id", None)) for m in output]
        return _first_mismatch(refs, corpus.reference)

    return Contender("mcp-sdk", "mcp SDK validate_json per line", "decode", make, check)


def decoders() -> list[Contender]:
    """Every decoding contender, native first, available or not."""
    return [
        _mcpframe_decoder("native", False),
        _mcpframe_decoder("native", True),
        _mcpframe_decoder("python", False),
        _orjson_decoder(),
        _msgspec_decoder(per_line=False),
        _msgspec_decoder(per_line=True),
        _sdk_decoder(),
    ]


def _check_encoded(corpus: Corpus, output: list[bytes]) -> str | None:
    joined = b"".join(output)
    if joined == corpus.data:
        return None
    if len(output) != corpus.count:
        return f"{len(output)} lines, expected {corpus.count}"
    for index, (line, want) in enumerate(zip(output, corpus.messages, strict=True)):
        if not line.endswith(b"\n") or orjson.loads(line) != want:
            return f"line {index} does not round-trip"
    return None  # equal values, float text aside (allowed by the contract)


def _mcpframe_encoder(backend: str) -> Contender:
    mod, reason = _load(backend)

    def make(corpus: Corpus, chunk: int) -> Timed:
        assert mod is not None
        encode = mod.encode
        messages = list(corpus.messages)
        return lambda: [encode(m) for m in messages]

    label = f"mcpframe {backend} encode"
    return Contender(f"{backend}-encode", label, "encode", make if mod else None, _check_encoded, reason)


def _orjson_encoder() -> Contender:
    def make(corpus: Corpus, chunk: int) -> Timed:
        dumps = orjson.dumps
        messages = list(corpus.messages)
        return lambda: [dumps(m) + b"\n" for m in messages]

    return Contender("orjson", 'orjson.dumps(msg) + b"\\n"', "encode", make, _check_encoded)


def encoders() -> list[Contender]:
    """Every encoding contender, available or not."""
    return [_mcpframe_encoder("native"), _mcpframe_encoder("python"), _orjson_encoder()]
