"""The generated corpus: its size and shape, every id class, determinism per seed, the cache, and that
every line is a valid JSON-RPC message to the python backend (the oracle)."""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import statistics
from pathlib import Path

import pytest

from mcpframe.bench import generated
from mcpframe.core import load_backend

METHODS = {
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "sampling/createMessage",
    "roots/list",
    "elicitation/create",
    "notifications/initialized",
    "notifications/progress",
    "notifications/message",
    "notifications/cancelled",
    "notifications/resources/updated",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/roots/list_changed",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> generated.Generated:
    return generated.load(folder=tmp_path_factory.mktemp("gen"))


def test_size_count_and_length_profile(corpus: generated.Generated) -> None:
    assert corpus.count >= 150_000
    assert corpus.nbytes >= 32 * 1024 * 1024
    assert corpus.path.stat().st_size == corpus.nbytes
    sizes = [len(line) for line in corpus.path.open("rb")]
    assert len(sizes) == corpus.count
    assert 140 <= statistics.median(sizes) <= 180
    tail = [s for s in sizes if s >= 100 * 1024]
    assert 3 <= len(tail) <= 40
    assert max(sizes) <= 1.1 * 1024 * 1024  # 1 MiB of text, some characters multi-byte or escaped
    assert sum(1024 <= s <= 32 * 1024 for s in sizes) >= 200  # the medium frames between


def test_every_line_is_valid_to_the_python_backend(corpus: generated.Generated) -> None:
    decoder = load_backend("python").Decoder()
    kinds: collections.Counter[str] = collections.Counter()
    count = 0
    for chunk in generated.chunks(corpus.path):
        for message in decoder.feed(chunk):
            assert hasattr(message, "kind"), message  # a FrameError has no kind
            kinds[message.kind] += 1
            count += 1
    assert list(decoder.close()) == []
    assert count == corpus.count
    assert set(kinds) == {"request", "notification", "result", "error"}


def test_shapes_ids_and_escapes_present(corpus: generated.Generated) -> None:
    methods: set[str] = set()
    ids: set[str | None] = set()
    error_data = image = blob = structured = exponent = 0
    raw = corpus.path.read_bytes()
    for line in raw.splitlines():
        message = json.loads(line)
        methods.add(message.get("method", ""))
        ids.add(generated.id_class(message.get("id")))
        error_data += "data" in message.get("error", {})
        image += b'"type":"image"' in line
        blob += b'"blob":' in line
        structured += b'"structuredContent":' in line
    assert methods >= METHODS
    assert set(generated.ID_CLASSES) <= ids
    assert min(error_data, image, blob, structured) > 0
    exponent = len([1 for token in (b"e-", b"e+", b"E-") if token in raw])
    assert exponent > 0
    for needle in ("東京", "😀", "a\u0301", "ü"):
        assert needle.encode() in raw  # raw UTF-8 ...
    for escape in (rb"\ud83d\ude00", rb"\u00fc", rb"\n", rb"\"", rb"\\", rb"\u0007", rb"\u0000"):
        assert escape in raw  # ... and escaped, surrogate pairs included
    assert b'", "' in raw or b'": ' in raw  # a spaced encoder's lines
    assert str(2**100 + 7).encode() in raw


def _head(seed: int, n: int) -> str:
    return hashlib.sha256(b"".join(itertools.islice(generated.lines(seed), n))).hexdigest()


def test_deterministic_per_seed() -> None:
    # Pinned: the same bytes on every run, machine and Python version (bump generated.VERSION with it).
    assert _head(1, 5000) == "8c1defd6d0dda23d1e101c119224fdcacf463fa85e06fe858538ed2372cb58d4"
    assert _head(1, 5000) == _head(1, 5000)
    assert _head(2, 5000) == _head(2, 5000)
    assert _head(1, 5000) != _head(2, 5000)
    short = b"".join(generated.lines(3, 100))
    assert short == b"".join(itertools.islice(generated.lines(3, 10_000), 100))
    assert short.count(b"\n") == 100


def test_cache_reused_then_regenerated_when_stale(tmp_path: Path) -> None:
    first = generated.load(seed=5, count=500, folder=tmp_path)
    stamp = first.path.stat().st_mtime_ns
    again = generated.load(seed=5, count=500, folder=tmp_path)
    assert again == first
    assert first.path.stat().st_mtime_ns == stamp  # not written again
    meta = first.path.with_suffix(".json")
    meta.write_text(meta.read_text().replace(f'"version": {generated.VERSION}', '"version": 0'))
    assert generated.load(seed=5, count=500, folder=tmp_path).sha256 == first.sha256
    assert hashlib.sha256(first.path.read_bytes()).hexdigest() == first.sha256
    assert generated.load(seed=6, count=500, folder=tmp_path).sha256 != first.sha256


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MCPFRAME_BENCH_CACHE", str(tmp_path / "x"))
    assert generated.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("MCPFRAME_BENCH_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert generated.cache_dir() == tmp_path / "mcpframe" / "bench"


def test_chunks_stream_the_file(tmp_path: Path) -> None:
    made = generated.load(seed=7, count=2000, folder=tmp_path)
    pieces = list(generated.chunks(made.path))
    assert b"".join(pieces) == made.path.read_bytes()
    assert all(len(p) == generated.CHUNK for p in pieces[:-1])
    limited = list(generated.chunks(made.path, 1000, limit=2500))
    assert [len(p) for p in limited] == [1000, 1000, 500]
