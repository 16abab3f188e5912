"""The strict decode method: line carry across chunks, the value check, the instruction-count mode."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpframe.bench import callgrind, generated, strict
from mcpframe.bench.runner import judge_strict


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> strict.Source:
    made = generated.load(seed=11, count=3000, folder=tmp_path_factory.mktemp("gen"))
    return strict.from_file("generated", made.path)


def test_every_contender_passes_the_check(source: strict.Source) -> None:
    found = strict.feeders()
    assert {"orjson", "msgspec-raw-line", "python-eager"} <= set(found)
    for feeder in found.values():
        assert strict.check(feeder, source) is None, feeder.key
        assert strict.run_once(feeder, source.chunks) == source.messages


def test_line_feeders_carry_partial_lines(source: strict.Source) -> None:
    data = b"".join(source.chunks)
    tiny = strict.from_bytes("tiny", data, chunk=7)  # most lines span several chunks
    assert tiny.messages == source.messages
    orjson_feeder = strict.feeders()["orjson"]
    assert strict.check(orjson_feeder, tiny) is None
    feed, close = orjson_feeder.start()
    assert feed(b'{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc"') == [{"jsonrpc": "2.0", "method": "a"}]
    assert feed(b':"2.0","method":"b"}') == []
    assert close() == [{"jsonrpc": "2.0", "method": "b"}]


def test_slices_end_on_a_line(source: strict.Source) -> None:
    data = b"".join(source.chunks)
    cut = strict.from_bytes("cut", data[:10_001])
    assert b"".join(cut.chunks) == data[: data[:10_001].rfind(b"\n") + 1]
    assert cut.messages == b"".join(cut.chunks).count(b"\n") > 0


def test_check_catches_a_wrong_decoder(source: strict.Source) -> None:
    good = strict.feeders()["orjson"]

    def dropping() -> tuple[Any, Any]:
        feed, close = good.start()
        return (lambda chunk: feed(chunk)[1:]), close

    def altering() -> tuple[Any, Any]:
        feed, close = good.start()
        return (lambda chunk: [{**m, "id": "x"} if "id" in m else m for m in feed(chunk)]), close

    assert strict.check(dataclasses.replace(good, start=dropping), source) is not None
    assert "message 0" in (strict.check(dataclasses.replace(good, start=altering), source) or "")


def test_only_orjson_may_read_huge_ints_as_floats() -> None:
    line = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % 2**70
    huge = strict.from_bytes("huge", line)
    found = strict.feeders()
    assert orjson.loads(line)["id"] == float(2**70)
    assert strict.check(found["orjson"], huge) is None
    strict_orjson = dataclasses.replace(found["orjson"], lossy_big_ints=False)
    assert strict.check(strict_orjson, huge) is not None
    assert strict.check(found["python-eager"], huge) is None


def test_measure_gives_medians_and_ratios(source: strict.Source) -> None:
    said: list[str] = []
    rows = strict.measure(source, 2, said.append)
    assert [r.key for r in rows] == list(strict.KEYS)
    by_key = {r.key: r for r in rows}
    assert by_key["orjson"].wall_ratio == 1.0
    for row in rows:
        if row.status == "ok":
            assert len(row.wall_s) == len(row.cpu_s) == 2
            assert row.cpu_ratio is not None
            assert row.cpu_ratio > 0
    assert any("GC off" in line for line in said)
    targets = judge_strict(rows, [])
    assert {t.corpus for t in targets} == {"generated (wall)", "generated (cpu)"}


def test_instruction_mode_without_valgrind_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(callgrind.shutil, "which", lambda name: None)
    with pytest.raises(callgrind.CallgrindMissing, match="valgrind is not installed"):
        callgrind.count(callgrind.SliceSpec("small"), ["orjson"], lambda s: None)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_instruction_mode_counts_a_corpus(tmp_path: Path) -> None:
    # One child and the baseline only: each starts Python under valgrind (tens of seconds on 2 cores).
    # A built-in corpus is written to a file once, so the children do not build it under valgrind.
    rows = callgrind.count(callgrind.SliceSpec("small"), ["orjson"], lambda s: None, keep=tmp_path)
    assert rows[0].status == "ok", rows[0].reason
    assert rows[0].messages == 5000
    assert rows[0].ratio == 1.0
    assert rows[0].instructions
    assert rows[0].per_message
    assert (tmp_path / "callgrind.small.orjson").exists()
    assert (tmp_path / "callgrind.small.none").exists()
