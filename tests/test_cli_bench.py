"""The ``mcpframe`` command: ``bench --quick`` output and JSON shape, ``serve`` delegation, the corpora.

These check shapes and correctness only; the figures themselves are never asserted (a timed test on a
shared machine proves nothing).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest

import mcpframe
from mcpframe import cli
from mcpframe.bench import callgrind, corpus
from mcpframe.bench.contenders import decoders, encoders
from mcpframe.bench.runner import FrameRow, Row, judge, judge_frames

DECODE_KEYS = {
    "native-eager",
    "native-lazy",
    "python-eager",
    "orjson",
    "msgspec-raw",
    "msgspec-raw-line",
    "mcp-sdk",
}
ENCODE_KEYS = {"native-encode", "python-encode", "orjson"}
TARGETS = 6
STRICT_TARGETS = 3 * 2  # eager, lazy, msgspec per line; on the wall and the CPU clock


Run = tuple[dict[str, Any], str, Path]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("bench")
    json_path, svg_path = out / "r.json", out / "r.svg"
    argv = ["bench", "--quick", "--corpus", "small", "--json", str(json_path), "--chart", str(svg_path)]
    argv += ["--clock", "cpu"]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = cli.main(argv)
    assert status == 0, stderr.getvalue()
    assert "done" in stderr.getvalue()
    return json.loads(json_path.read_text()), stdout.getvalue(), svg_path


def test_bench_json_has_every_contender(quick_run: Run) -> None:
    doc, _, _ = quick_run
    assert doc["schema"] == 1
    assert doc["settings"]["quick"] is True
    assert doc["settings"]["clock"] == "cpu"
    assert doc["settings"]["corpora"] == ["small"]
    assert set(doc["environment"]["backends"]) == {"native", "python"}
    assert doc["corpora"]["small"]["messages"] == corpus.build("small", scale=0.04).count
    decode = {r["key"]: r for r in doc["results"] if r["op"] == "decode"}
    encode = {r["key"]: r for r in doc["results"] if r["op"] == "encode"}
    assert set(decode) == DECODE_KEYS
    assert set(encode) == ENCODE_KEYS
    for row in doc["results"]:
        assert row["status"] in {"ok", "unavailable"}, row  # "failed" means a contender's output was wrong
        if row["status"] == "ok":
            assert row["best_s"] > 0
            assert row["msgs_per_s"] > 0
            assert row["mb_per_s"] > 0
            assert row["us_per_msg"] > 0
            assert row["rounds"] >= 1
    assert decode["orjson"]["ratio"] == 1.0
    assert encode["orjson"]["ratio"] == 1.0


def test_bench_status_follows_backend_availability(quick_run: Run) -> None:
    doc, _, _ = quick_run
    rows = {(r["op"], r["key"]): r for r in doc["results"]}
    for backend, state in doc["environment"]["backends"].items():
        expected = "ok" if state == "available" else "unavailable"
        assert rows[("decode", f"{backend}-eager")]["status"] == expected
        assert rows[("encode", f"{backend}-encode")]["status"] == expected
    assert doc["environment"]["backends"]["python"] == "available"


def test_bench_targets_and_frames(quick_run: Run) -> None:
    doc, _, _ = quick_run
    targets = doc["targets"]
    assert len(targets) == TARGETS + STRICT_TARGETS
    for target in targets:
        assert target["corpus"] in {"small", "small (wall)", "small (cpu)"}
        assert target["compare"] in {"<=", ">="}
        assert (target["met"] is None) == (target["value"] is None)
    native = doc["environment"]["backends"]["native"] == "available"
    assert all((t["met"] is None) is not native for t in targets)
    assert {f["size"] for f in doc["frames"]} == {1024 * 1024}
    python_frame = next(f for f in doc["frames"] if f["key"] == "python-eager")
    assert python_frame["status"] == "ok"
    assert python_frame["ns_per_byte"] > 0


def test_bench_prints_table_and_writes_svg(quick_run: Run) -> None:
    _, text, svg_path = quick_run
    assert "backends: native: " in text
    for label in (
        "orjson.loads per line",
        "msgspec Struct + Raw",
        "mcp SDK validate_json per line",
    ):
        assert label in text
    # the last lines are for users: what was measured, how mcpframe compared, in words; no target checklist
    tail = text[text.index("\nsummary\n") :]
    assert "--quick: tiny corpora and one round: a smoke test" in tail
    native = "native: available" in text
    assert ("decoding, mcpframe (native core) ran " in tail) is native
    assert "without Rust (python core), decoding ran " in tail
    assert "met, " not in text
    assert "MISSED" not in text
    assert tail.rstrip().endswith("mcpframe bench --targets)")
    root = ET.fromstring(svg_path.read_text())
    # a smoke run's chart says so under its title
    notes = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any(
        n.startswith("--quick SMOKE RUN") and "NOT A MEASUREMENT" in n and "cpu clock" in n for n in notes
    )
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    bars = root.findall("{http://www.w3.org/2000/svg}rect")
    assert len(bars) >= 1 + 4  # background, then at least python, orjson, msgspec, SDK on decode


def test_bench_targets_flag_adds_the_goal_checklist() -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = cli.main(["bench", "--quick", "--corpus", "small", "--clock", "cpu", "--targets"])
    assert status == 0, stderr.getvalue()
    text = stdout.getvalue()
    assert text.index("\nsummary\n") < text.index("\ntargets (")
    assert f"of {TARGETS + STRICT_TARGETS} met, " in text
    assert "mcpframe bench --targets)" not in text


def test_python_m_mcpframe_runs_the_bench(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(mcpframe.__file__).resolve().parent.parent))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpframe",
            "bench",
            "--quick",
            "--corpus",
            "small",
            "--json",
            str(tmp_path / "x.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "targets" in done.stdout
    assert "done" in done.stderr
    assert json.loads((tmp_path / "x.json").read_text())["schema"] == 1


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "bench" in capsys.readouterr().out


def test_bench_rejects_bad_chunk(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "--chunk", "0"]) == 2
    assert "--chunk" in capsys.readouterr().err


def test_serve_delegates_every_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    fake = types.ModuleType("fake_serve_cli")
    fake.serve_main = lambda argv: seen.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_serve_cli", fake)
    monkeypatch.setattr(cli, "_SERVE_MODULE", "fake_serve_cli")
    assert cli.main(["serve", "--help", "--transport", "stdio"]) == 7
    assert seen == [["--help", "--transport", "stdio"]]


def test_serve_missing_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "_SERVE_MODULE", "mcpframe.server._no_such_module")
    assert cli.main(["serve"]) == 2
    assert "no server" in capsys.readouterr().err


def test_corpora_are_deterministic() -> None:
    # Pinned digest: the corpora must be the same bytes on every run and every machine.
    first = corpus.build("small")
    assert first.sha256 == "61ebb4bf000a0a5915fd6ff66746c2332b28fe8f3b74605fbf2bb7f62bf05893"
    corpus.build.cache_clear()
    assert corpus.build("small").data == first.data
    assert corpus.build("small", scale=0.1).data == first.data[: corpus.build("small", scale=0.1).nbytes]


@pytest.mark.parametrize("name", corpus.CORPORA)
def test_corpus_shape(name: corpus.CorpusName) -> None:
    built = corpus.build(name)
    lines = built.data.split(b"\n")
    assert lines[-1] == b""
    assert len(lines) - 1 == built.count == len(built.reference)
    assert [orjson.loads(line) for line in lines[:-1]] == list(built.messages)
    assert [corpus.kind_of(m) for m in built.messages] == list(built.reference)
    sizes = sorted(len(line) for line in lines[:-1])
    kinds = {kind for kind, _ in built.reference}
    if name == "small":
        assert kinds == {"request", "notification", "result", "error"}
        assert sizes[int(len(sizes) * 0.9)] < 512
    elif name == "mixed":
        assert kinds == {"request", "notification", "result", "error"}
        assert sizes[-1] >= 64 * 1024
    else:
        big = [s for s in sizes if s >= 64 * 1024]
        assert len(big) == built.count // 2
        assert max(big) <= 1024 * 1024


def test_big_frame_is_one_result_of_the_size() -> None:
    frame = corpus.big_frame(1024 * 1024)
    assert frame.count(b"\n") == 1
    assert 1024 * 1024 - 8 <= len(frame) <= 1024 * 1024 + 1
    assert corpus.kind_of(orjson.loads(frame)) == ("result", 7)


def test_contender_checks_catch_wrong_output() -> None:
    small = corpus.build("small", scale=0.04)
    orjson_decoder = next(c for c in decoders() if c.key == "orjson")
    assert orjson_decoder.check(small, [orjson.loads(line) for line in small.data.splitlines()]) is None
    assert orjson_decoder.check(small, []) is not None
    shuffled = [orjson.loads(line) for line in small.data.splitlines()][::-1]
    assert orjson_decoder.check(small, shuffled) is not None
    orjson_encoder = next(c for c in encoders() if c.key == "orjson")
    assert orjson_encoder.check(small, [orjson.dumps(m) + b"\n" for m in small.messages]) is None
    assert orjson_encoder.check(small, [orjson.dumps(m) for m in small.messages]) is not None


def _row(corpus_name: str, key: str, best: float | None) -> Row:
    status = "ok" if best else "unavailable"
    return Row("decode", corpus_name, key, key, status, None, 10, 1000, best_s=best)


def test_targets_are_judged_on_time_ratios() -> None:
    times = {"native-eager": 0.7, "native-lazy": 0.25, "python-eager": 2.0, "orjson": 1.0, "msgspec-raw": 0.5}
    times["msgspec-raw-line"] = 0.75
    rows = [_row("small", key, best) for key, best in times.items()] + [_row("small", "mcp-sdk", None)]
    got = {t.name: (t.value, t.met) for t in judge(rows)}
    assert got["native eager time / orjson"] == (pytest.approx(0.7), True)
    assert got["native lazy time / orjson"] == (pytest.approx(0.25), True)
    assert got["msgspec Raw time / native lazy"] == (pytest.approx(2.0), False)
    assert got["msgspec Raw per-line time / native lazy"] == (pytest.approx(3.0), True)
    assert got["python backend time / native"] == (pytest.approx(2.0 / 0.7), False)
    assert got["mcp SDK time / native"] == (None, None)


def test_frame_flatness_is_growth_relative_to_orjson() -> None:
    mib = 1024 * 1024
    frames = [
        FrameRow("orjson", "o", 1 * mib, "ok", None, 0.001),
        FrameRow("orjson", "o", 32 * mib, "ok", None, 0.064),  # grows 2x per byte
        FrameRow("native-eager", "n", 1 * mib, "ok", None, 0.001),
        FrameRow("native-eager", "n", 32 * mib, "ok", None, 0.080),  # 2.5x: 1.25x orjson's growth
        FrameRow("native-lazy", "n", 1 * mib, "ok", None, 0.001),
        FrameRow("native-lazy", "n", 32 * mib, "ok", None, 0.128),  # 4x: 2x orjson's growth
    ]
    got = {t.name.split()[0]: (t.value, t.met) for t in judge_frames(frames)}
    assert got["native-eager"] == (pytest.approx(1.25), True)
    assert got["native-lazy"] == (pytest.approx(2.0), False)
    assert judge_frames(frames[:1]) == []


def test_bench_generated_corpus_strict_section(tmp_path: Path) -> None:
    def run(*extra: str) -> dict[str, Any]:
        out = tmp_path / "g.json"
        argv = ["bench", "--quick", "--corpus", "generated", "--cache-dir", str(tmp_path), "--json", str(out)]
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            assert cli.main([*argv, *extra]) == 0, stderr.getvalue()
        assert "strict decode: 64 KiB chunks to every contender" in stdout.getvalue()
        doc: dict[str, Any] = json.loads(out.read_text())
        return doc

    doc = run("--rounds", "2")
    assert doc["results"] == []  # the generated corpus has the strict section only
    assert doc["settings"]["seed"] == 1
    assert doc["settings"]["strict_statistic"] == "median"
    info = doc["corpora"]["generated"]
    assert Path(info["path"]).parent == tmp_path
    rows = {r["key"]: r for r in doc["strict"]}
    assert set(rows) == {"native-eager", "native-lazy", "python-eager", "orjson", "msgspec-raw-line"}
    for row in rows.values():
        assert row["status"] in {"ok", "unavailable"}, row
        assert row["messages"] == info["messages"]
    assert rows["orjson"]["cpu_ratio"] == 1.0
    other = run("--seed", "2")
    assert other["corpora"]["generated"]["sha256"] != info["sha256"]
    assert other["settings"]["seed"] == 2


@pytest.mark.parametrize(("flag", "value"), [("--rounds", "0"), ("--slice-mb", "0")])
def test_bench_rejects_bad_strict_options(flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", flag, value]) == 2
    assert flag in capsys.readouterr().err


def test_bench_instructions_without_valgrind(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(callgrind.shutil, "which", lambda name: None)
    assert cli.main(["bench", "--quick", "--corpus", "small", "--clock", "instructions"]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err
