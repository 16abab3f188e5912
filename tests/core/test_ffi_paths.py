"""The native core's CPython paths (``src/python/ffi/``): the internals it reads only on the versions
they were verified on, ``MCPFRAME_PUBLIC_ONLY`` forcing the public C API everywhere, and the same bytes
either way.

Each case runs in a child interpreter, since the switch is read once, when ``mcpframe._core`` is
imported (and this process may itself run under it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from typing import Any

import pytest
from tests.conftest import Backends

SWITCH = "MCPFRAME_PUBLIC_ONLY"

# Encodes values that take every branch of the direct paths and of their public fallbacks: dict
# tables with holes (deleted entries), a general-kind table, a split table (an instance's
# `__dict__`), ints around the one- and two-digit limits and beyond 64 bits, subclasses, lines
# larger than the scratch buffer (16 KiB) and than what a thread keeps of it (64 KiB), errors.
PROGRAM = r"""
import json
from mcpframe import _core

class Obj:
    def __init__(self):
        self.a, self.b, self.c = 1, "two", [3.5]

class Int(int): pass
class Dict(dict): pass
class Str(str): pass

holes = {f"k{i}": i for i in range(12)}
del holes["k3"], holes["k7"]
general = {1: "gone", "a": 1, "b": [None, True]}
del general[1]
# Deleted entries among the first values the walker prefetches, and containers longer than that.
leading = {f"k{i}": [i, str(i), {"n": i}] for i in range(10)}
for i in (0, 1, 2, 3, 5):
    del leading[f"k{i}"]
emptied = {"a": 1, "b": 2}
del emptied["a"], emptied["b"]
ints = [0, 1, -1, 2**30 - 1, 2**30, -(2**30), 2**60 - 1, 2**60, -(2**60) + 1, 2**63 - 1, -(2**63),
        2**63, 2**64 + 5, -(10**30), Int(7), Int(2**62)]
values = [
    holes, general, leading, emptied, vars(Obj()), ints, Dict(x=Str("y")), {"s": "\u0000\"\\é😀\ud7ff"},
    {"mid": "m" * 20_000}, {"big": "b" * 100_000, "n": list(range(20_000)), "d": holes},
    {"after": "a small line after a large one"},
    ["é", "\u0101x", "😀", "naïve ω 🙂", Str("ünï"), "é" * 5000, {"ключ": "значение"}],
]
# Non-ASCII text of each storage kind (1-, 2-, 4-byte code units), with every escape and control
# character in each, astral characters, runs of escapes long enough to grow the line, subclasses.
base = "a\x00\x01\x1f\"\\\b\t\n\f\r\x7f \u0080 é ÿ"
texts = [base, base + "ω€\u07ff\u0800\ud7ff\ue000\uffff", base + "ω😀\U00010000\U0010ffff"]
texts += ["\x01" * 3000 + "é", "\x1f\"" * 3000 + "ω", "\n" * 3000 + "😀"]
texts += ["é" * 9000 + "\x00", "€" * 9000 + "\\", "😀" * 9000 + '"', "\u2028\u2029\ufeff"]
texts += [Str(text) for text in texts[:3]]
out = {"paths": _core._ffi_paths(), "lines": [_core.encode(v).hex() for v in values]}
out["texts"] = [_core.encode([text, {text: text}]).hex() for text in texts]
out["many"] = _core.encode_many(values).hex()
out["request"] = _core.encode_request(2**40, "tools/call", {"arguments": holes}).hex()
errors = []
# Lone surrogates in each kind, alone, after other text, in a subclass, as a key.
surrogates = ["\ud800", "é\udfff", "ω\ud800x", "😀\udc00", ["ok", "ÿ\ud800"], Str("x\udbff€"), {"\ud800é": 1}]
for bad in [{1: 2}, {"a": {2: 3}}, [1, object()], 10**5000, *surrogates]:
    try:
        _core.encode(bad)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
out["errors"] = errors
print(json.dumps(out))
"""


def _run(switch: str | None) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if key != SWITCH}
    if switch is not None:
        env[SWITCH] = switch
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _verified_private() -> set[str]:
    """The paths that read CPython internals on this interpreter when the switch is off."""
    if sys.implementation.name != "cpython":
        return set()
    private = set()
    if sys.version_info[:2] == (3, 11) and sys.int_info.bits_per_digit == 30:
        private.add("int")
    # The dict entry table: one layout on 3.11 to 3.13 with the GIL.
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    if (3, 11) <= sys.version_info[:2] <= (3, 13) and not free_threaded:
        private.add("dict")
    # PyUnstable_Long_CompactValue (documented unstable API, written out from its inline definition).
    if (3, 12) <= sys.version_info[:2] <= (3, 13) and sys.int_info.sizeof_digit == 4:
        private.add("int")
    if (3, 11) <= sys.version_info[:2] <= (3, 13):
        private.add("bytes")
    # The UTF-8 cache of a non-ASCII str (3.11's layout has one more field before it).
    if (3, 11) <= sys.version_info[:2] <= (3, 13) and not free_threaded:
        private.add("str")
    return private


@pytest.fixture(scope="module")
def runs() -> dict[str | None, dict[str, Any]]:
    return {switch: _run(switch) for switch in (None, "0", "1")}


def test_paths_are_private_exactly_where_verified(both_backends: Backends, runs: dict[Any, Any]) -> None:
    paths = runs[None]["paths"]
    assert set(paths) == {"dict", "str", "int", "bytes"}
    private = {name for name, path in paths.items() if path.startswith("private:")}
    assert private == _verified_private()
    assert all(path.startswith(("private:", "public:")) for path in paths.values())
    assert runs["0"]["paths"] == paths  # "0" is off, like unset


def test_the_switch_forces_every_public_path(both_backends: Backends, runs: dict[Any, Any]) -> None:
    paths = runs["1"]["paths"]
    assert set(paths) == {"dict", "str", "int", "bytes"}
    assert all(path.startswith("public:") for path in paths.values()), paths


def test_both_paths_encode_the_same_bytes(both_backends: Backends, runs: dict[Any, Any]) -> None:
    private, public = runs[None], runs["1"]
    for key in ("lines", "many", "request", "errors", "texts"):
        assert private[key] == public[key], key
    assert len(public["errors"]) == 11
    assert public["errors"][0] == "EncodeError: Dict key must be str"
    assert set(public["errors"][4:]) == {"EncodeError: str is not valid UTF-8: surrogates not allowed"}
    # The values went through unchanged (holes skipped, order kept), and the large line is whole.
    lines = [bytes.fromhex(line) for line in public["lines"]]
    assert [json.loads(line) for line in lines[:4]] == [
        {f"k{i}": i for i in range(12) if i not in (3, 7)},
        {"a": 1, "b": [None, True]},
        {f"k{i}": [i, str(i), {"n": i}] for i in (4, 6, 7, 8, 9)},
        {},
    ]
    assert len(lines[9]) > 4 * 16 * 1024
    assert lines[9] == both_backends.python.encode(json.loads(lines[9]))
    assert bytes.fromhex(public["many"]) == b"".join(lines)


def test_text_of_every_kind_encodes_as_json_does(both_backends: Backends, runs: dict[Any, Any]) -> None:
    texts = [bytes.fromhex(line) for line in runs[None]["texts"]]
    assert len(texts) == 13
    for line in texts:
        value = json.loads(line)
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        assert line == expected
        assert line == both_backends.python.encode(value)
