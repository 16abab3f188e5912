"""Coverage-guided differential target for the Python layer (atheris): native vs python backend.

Every input is an NDJSON byte stream. It is fed to both backends in several chunkings derived from
its own bytes (whole, random cuts, byte by byte when short) with options derived the same way;
the two backends must agree after every ``feed`` (items, ``offset``, ``buffered``), the result must
not depend on the chunking, ``feed``/``close``/``decode`` must never raise, and a one-line body
must decode with ``decode`` exactly as it frames with ``feed``. ``--structured`` draws the stream
from the hypothesis strategies of ``tests/core/strategies.py`` instead (``fuzz_one_input``), so the
fuzzer's coverage feedback steers those strategies. ``mcpframe`` is instrumented for coverage: the
python backend's branches (the contract's, one for one) guide both backends' inputs.

Run: ``python fuzz/python/fuzz_core.py [--structured] [libFuzzer flags] [corpus dirs]``, or
``make fuzz``. A mismatch raises ``Mismatch``; atheris saves the input as ``crash-<sha1>``.
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.core: the backend-neutral views and the strategies

with atheris.instrument_imports(include=["mcpframe"]):
    from mcpframe.core import load_backend

    NATIVE = load_backend("native")
    PYTHON = load_backend("python")  # imported here, so its bytecode is instrumented

from hypothesis import HealthCheck, given, settings  # noqa: E402
from tests.core._support import canon, is_message, split_at  # noqa: E402
from tests.core.strategies import BOM, streams  # noqa: E402

BYTE_BY_BYTE_UP_TO = 128


class Mismatch(AssertionError):
    """The backends disagree, or one broke the contract (raised on input, chunking changed things)."""


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What ``call()`` returned, as backend-neutral views, or the exception it raised."""
    try:
        result = call()
        if isinstance(result, list):
            return ("returned", [view(item) for item in result])
        return ("returned", result)
    except Exception as exc:  # the class and text are part of the contract
        return ("raised", type(exc).__name__, str(exc))


def view(item: Any) -> tuple[Any, ...]:
    """Every contract field of a Message or FrameError (lazy values built here); ``raw`` once it exists."""
    if is_message(item):
        return (*canon(item), item.with_id("fuzz") if item.id is not None else None)
    return (*canon(item), getattr(item, "raw", "<no raw>"), item.to_response())


def run_stream(backend: ModuleType, chunks: list[bytes], options: dict[str, Any]) -> list[Any]:
    """Per feed: what it returned, then ``offset`` and ``buffered``; then close, then a feed after it."""
    decoder = backend.Decoder(**options)
    trace: list[Any] = []
    for chunk in chunks:
        trace.append((outcome(partial(decoder.feed, chunk)), decoder.offset, decoder.buffered))
    trace.append(outcome(decoder.close))
    trace.append(outcome(lambda: decoder.feed(b"x")))
    return trace


def items_of(trace: list[Any]) -> list[Any]:
    """Everything a trace produced, in order (the chunking must not change it)."""
    steps = [step[0] for step in trace[:-2]] + [trace[-2]]
    for step in steps:
        if step[0] != "returned":
            raise Mismatch(f"feed/close raised on input: {shown(step)}")
    return [item for step in steps for item in step[1]]


def settings_for(seed: bytes) -> tuple[random.Random, dict[str, Any]]:
    """A generator seeded by ``seed`` (the input's bytes), and decoder options drawn from it."""
    rng = random.Random(hashlib.blake2b(seed, digest_size=8).digest())
    options: dict[str, Any] = {"lazy": rng.random() < 0.5, "batches": rng.random() < 0.8}
    if rng.random() < 0.5:
        options["max_frame"] = 1 + rng.randrange(min(len(seed), 200) + 1)
    return rng, options


def chunkings(rng: random.Random, size: int) -> list[list[int]]:
    """Split points: none, two random sets, and every byte when the input is short."""
    cuts = [
        [],
        sorted(rng.choices(range(size + 1), k=rng.randrange(9))),
        sorted(rng.sample(range(size + 1), 1)),
    ]
    if size <= BYTE_BY_BYTE_UP_TO:
        cuts.append(list(range(1, size)))
    return cuts


def shown(value: Any, limit: int = 2000) -> str:
    """``repr(value)``, cut to ``limit`` characters; integers of any size included (the view holds them
    exactly, and ``repr`` refuses past ``sys.get_int_max_str_digits()``: lifted only while printing)."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        text = repr(value)
    finally:
        sys.set_int_max_str_digits(old)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def agree(what: str, native: Any, python: Any) -> None:
    """Raise ``Mismatch`` naming ``what`` when the two views differ."""
    if native != python:
        raise Mismatch(f"{what}:\n  native: {shown(native)}\n  python: {shown(python)}")


def check_one_shot(data: bytes, options: dict[str, Any], framed: list[Any]) -> None:
    """``decode`` agrees across backends, never raises, and matches ``feed`` for a one-line body."""
    native = outcome(lambda: NATIVE.decode(data, **options))
    agree("decode", native, outcome(lambda: PYTHON.decode(data, **options)))
    if native[0] != "returned":
        raise Mismatch(f"decode raised on input: {shown(native)}")
    # one frame either way, unless blank (decode reports a blank body; feed skips a blank line)
    one_line = b"\n" not in data and not data.endswith(b"\r") and data.removeprefix(BOM).strip(b" \t\r")
    if one_line and len(framed) == len(native[1]):
        agree("decode vs feed of one line", native[1], framed)
    elif one_line:
        raise Mismatch(f"decode gave {len(native[1])} items, feed {len(framed)}")


def check(data: bytes, seed: bytes | None = None) -> None:
    """Every property above, on one input; options and cuts drawn from ``seed`` (default: ``data``)."""
    rng, options = settings_for(data if seed is None else seed)
    whole: list[Any] | None = None
    for points in chunkings(rng, len(data)):
        chunks = split_at(data, points)
        native = run_stream(NATIVE, chunks, options)
        agree(f"feed, cut at {points}, {options}", native, run_stream(PYTHON, chunks, options))
        items = items_of(native)
        if whole is None:
            whole = items
        else:
            agree(f"chunking {points} vs whole, {options}", items, whole)
    check_one_shot(data, options, whole or [])


def structured(artifacts: Path) -> Callable[[bytes], Any]:
    """A hypothesis property over ``strategies.streams()``, driven by the fuzzer's bytes. The fuzzer
    saves its own input (hypothesis choices); the stream itself is saved too, as ``stream-<sha1>``,
    so ``--minimize`` can shrink it and anyone can read it."""

    @settings(database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(stream=streams())
    def property_(stream: bytes) -> None:
        try:
            check(stream)
        except Exception:
            artifacts.mkdir(parents=True, exist_ok=True)
            (artifacts / f"stream-{hashlib.sha1(stream).hexdigest()}").write_bytes(stream)
            raise

    return property_.hypothesis.fuzz_one_input  # type: ignore[attr-defined,no-any-return]


def failure(data: bytes, seed: bytes | None = None) -> str | None:
    """How ``check`` fails on ``data`` (its class and the property's name), or ``None``."""
    try:
        check(data, seed)
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).partition(',')[0].partition(':')[0]}"
    return None


def minimize(path: Path, budget: float = 120.0) -> Path:
    """Shrink the input at ``path`` while ``check`` still fails the same way, chunks then single bytes
    removed greedily (within ``budget`` seconds), the options drawn from the original input all along
    (drawn from each candidate, they would change at every step). Write it beside it as
    ``minimized-<name>`` and return that path; say whether it also fails with its own options."""
    seed = data = path.read_bytes()
    why = failure(data)
    if why is None:
        raise SystemExit(f"{path} does not fail")
    deadline = time.monotonic() + budget
    size = max(len(data) // 2, 1)
    while size >= 1 and time.monotonic() < deadline:
        at = 0
        while at < len(data) and time.monotonic() < deadline:
            smaller = data[:at] + data[at + size :]
            if failure(smaller, seed) == why:
                data = smaller
            else:
                at += size
        size //= 2
    out = path.with_name(f"minimized-{path.name}")
    out.write_bytes(data)
    alone = "fails on its own too" if failure(data) else f"fails with the options of {path.name}"
    print(f"{why}\nminimized {path} to {len(data)} bytes ({alone}): {out}\n{shown(data, 400)}")
    return out


def main(argv: list[str]) -> None:
    """``--minimize FILE`` shrinks a finding; else fuzz (``--structured`` for the hypothesis-driven
    mode), every other argument going to libFuzzer."""
    if "--minimize" in argv:
        minimize(Path(argv[argv.index("--minimize") + 1]))
        return
    prefix = next((a.split("=", 1)[1] for a in argv if a.startswith("-artifact_prefix=")), "./")
    target = structured(Path(prefix)) if "--structured" in argv else check
    atheris.Setup([arg for arg in argv if arg != "--structured"], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
