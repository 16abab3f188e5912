"""Native ``encode`` against ``orjson.dumps(msg) + b"\\n"`` on the bench corpora, for one interpreter.

Usage: ``python benches/encode_ratio.py [--corpus small mixed large] [--clock cpu|wall] [--rounds 30]``.
It prints the interpreter, which CPython paths the native core took (``_core._ffi_paths()``: the private
layouts where verified, the public C API elsewhere or under ``MCPFRAME_PUBLIC_ONLY=1``), then per corpus
the best time per message of each encoder and their ratio. Each round times both encoders back to back, the
one that goes first alternating from round to round, with the cyclic GC collected and then off (the same
state for both); a noisy neighbour slows both alike.

The orjson side is ``orjson.dumps(msg) + b"\n"`` (``--newline concat``, what the issue's target names and
what code written against orjson's default API does), or ``orjson.dumps(msg, option=OPT_APPEND_NEWLINE)``
(``--newline option``, no second ``bytes`` object). ``--drop`` times each encoder dropping every line as
soon as it is made (a writer's pattern) instead of keeping them until the run ends. ``--fresh SEED`` adds
a corpus of another shape, generated here with that seed (``fresh``: deeper and wider objects, random
field names, floats, non-ASCII text), so a figure does not rest on the bench corpora alone;
``--fresh-count N`` makes it N messages instead of 3,000 (100 stay in the caches); ``--shuffle SEED`` adds
the same corpus walked in an order shuffled with that seed (``fresh<seed>s``: consecutive messages no
longer sit side by side in memory).

``--kind K [K ...]`` adds, per value kind of the fresh corpus (``text``: its mostly non-ASCII texts,
``ascii``: texts of its ASCII words only, ``int``: 0-1000, ``bigint``: up to 2^40 either sign,
``float``, ``const``: True/False/None, ``member``: dicts of its field names, ``empty``: ``[]``/``{}``),
a corpus of 100 lists of 60 such values (15 dicts for ``member``), small enough to stay in the caches:
with ``--instructions`` it prints instructions per message; divide by the values (or members) per
message for the cost of one value of that kind. ``--kind-count N`` makes those corpora N lists instead
of 100 (3,000: larger than the caches, like ``fresh7``, so each kind is timed cold).

``--build NAME=PATH`` (repeatable) also times another build of ``_core`` (a copy of the ``.so`` before a
change) in the same rounds, loaded beside the installed one, and prints its time and median ratio to orjson.

``--split`` times each bench corpus as buckets of line sizes instead (``mixed<1k``, ``mixed1-16k``,
``mixed16-64k``, ``mixed>64k``: the messages whose lines fall in each), to see which sizes pay.

``--only native|orjson --repeat N`` runs one encoder N times over each corpus and times nothing: run it
under ``valgrind --tool=callgrind`` with two values of N and subtract, to count instructions per message
without the start-up (see ``benches/README.md``).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ is None and "mcpframe" not in sys.modules:  # pragma: no cover - run from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import orjson

from mcpframe import _core
from mcpframe.bench.corpus import CORPORA, Corpus, build

Run = Callable[[], list[bytes]]


def _native(encode: Callable[[Any], bytes], messages: list[Any], drop: bool) -> Run:
    """A native build's ``encode`` over the messages (see ``_runs``)."""

    def native() -> list[bytes]:
        if drop:
            for m in messages:
                encode(m)
            return []
        return [encode(m) for m in messages]

    return native


def _runs(
    corpus: Corpus, newline: str, *, drop: bool = False, builds: dict[str, ModuleType] | None = None
) -> dict[str, Run]:
    """Both encoders over the corpus (and each of ``builds``' ``encode``): each returns its lines, or with
    ``drop`` drops every line as soon as it is made (a writer's pattern; the allocator then reuses the
    memory at once) and returns none."""
    dumps, append = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    messages = list(corpus.messages)

    def concat() -> list[bytes]:
        if drop:
            for m in messages:
                dumps(m) + b"\n"
            return []
        return [dumps(m) + b"\n" for m in messages]

    def option() -> list[bytes]:
        if drop:
            for m in messages:
                dumps(m, option=append)
            return []
        return [dumps(m, option=append) for m in messages]

    runs = {
        "native": _native(_core.encode, messages, drop),
        "orjson": option if newline == "option" else concat,
    }
    runs.update({name: _native(build.encode, messages, drop) for name, build in (builds or {}).items()})
    return runs


def _load_builds(specs: list[str]) -> dict[str, ModuleType]:
    """``NAME=PATH`` specs: other builds of ``_core`` (e.g. a copy of the ``.so`` before a change),
    loaded beside the installed one, so a change is timed against its base in the same rounds."""
    builds = {}
    for spec in specs:
        name, _, path = spec.partition("=")
        if not path or name in ("native", "orjson"):
            raise SystemExit(f"--build wants NAME=PATH with another name than native/orjson: {spec!r}")
        found = importlib.util.spec_from_file_location("mcpframe._core", path)
        if found is None or found.loader is None:
            raise SystemExit(f"not an extension module: {path}")
        module = importlib.util.module_from_spec(found)
        found.loader.exec_module(module)
        builds[name] = module
    return builds


_FIELDS = [f"{stem}_{i}" for stem in ("name", "size", "path", "tags", "score", "owner") for i in range(40)]
_TEXT = ("alpha", "beta", "gamma", "δέλτα", "ε", "zeta", "η", "θ", "iota", "kappa", "λ", "🙂", "naïve", "x")


def _fresh_value(rng: random.Random, depth: int) -> Any:
    """One value of the fresh corpus: containers down to ``depth``, then scalars of every kind."""
    pick = rng.random()
    if depth > 0 and pick < 0.3:
        return {rng.choice(_FIELDS): _fresh_value(rng, depth - 1) for _ in range(rng.randint(1, 8))}
    if depth > 0 and pick < 0.45:
        return [_fresh_value(rng, depth - 1) for _ in range(rng.randint(0, 6))]
    if pick < 0.65:
        return " ".join(rng.choice(_TEXT) for _ in range(rng.randint(1, 12)))
    if pick < 0.8:
        return rng.randint(-(2**40), 2**40) if rng.random() < 0.2 else rng.randint(0, 1000)
    if pick < 0.9:
        return rng.uniform(-1e6, 1e6)
    return rng.choice((True, False, None))


def _fresh(seed: int, count: int = 3000, shuffle: int | None = None) -> Corpus:
    """A corpus of another shape than the bench's: JSON-RPC results with random, nested payloads. With
    ``shuffle``, the messages are walked in an order shuffled with that seed instead of the order they
    were built (and their objects allocated) in: named ``fresh<seed>s``."""
    rng = random.Random(seed)
    messages = [
        {
            "jsonrpc": "2.0",
            "id": i,
            "result": {"items": [_fresh_value(rng, 4) for _ in range(rng.randint(1, 4))]},
        }
        for i in range(count)
    ]
    name = f"fresh{seed}"
    if shuffle is not None:
        random.Random(shuffle).shuffle(messages)
        name += "s"
    data = b"".join(orjson.dumps(m) + b"\n" for m in messages)
    return Corpus(name, data, tuple(messages), ())


_KIND_VALUES = 60
_KIND_MESSAGES = 100


_ASCII_WORDS = [word for word in _TEXT if word.isascii()]

# What each `--kind` draws, as the fresh corpus draws it.
_KIND_DRAWS: dict[str, Callable[[random.Random], Any]] = {
    "text": lambda rng: " ".join(rng.choice(_TEXT) for _ in range(rng.randint(1, 12))),
    "ascii": lambda rng: " ".join(rng.choice(_ASCII_WORDS) for _ in range(rng.randint(1, 12))),
    "int": lambda rng: rng.randint(0, 1000),
    "bigint": lambda rng: rng.randint(-(2**40), 2**40),
    "float": lambda rng: rng.uniform(-1e6, 1e6),
    "const": lambda rng: rng.choice((True, False, None)),
    "member": lambda rng: {rng.choice(_FIELDS): 0 for _ in range(rng.randint(1, 8))},
    "empty": lambda rng: [] if rng.random() < 0.5 else {},
}


_KINDS = tuple(_KIND_DRAWS)


def _kind(kind: str, count: int = _KIND_MESSAGES) -> Corpus:
    """``--kind``'s corpus: ``count`` lists of 60 values of one kind (15 dicts for ``member``)."""
    rng = random.Random(7)
    per = _KIND_VALUES // 4 if kind == "member" else _KIND_VALUES
    draw = _KIND_DRAWS[kind]
    messages = [[draw(rng) for _ in range(per)] for _ in range(count)]
    data = b"".join(orjson.dumps(m) + b"\n" for m in messages)
    return Corpus(f"kind-{kind}", data, tuple(messages), ())


def _check(corpus: Corpus, runs: dict[str, Run]) -> None:
    # A figure is worth nothing if the output is wrong: both must give the corpus bytes back.
    for name, run in runs.items():
        if b"".join(run()) != corpus.data:
            raise SystemExit(f"{name} does not reproduce the {corpus.name} corpus")


def _time(
    runs: dict[str, Run], rounds: int, clock: Callable[[], float]
) -> tuple[dict[str, float], dict[str, float]]:
    """The best time of each run, and the median over rounds of each run's time ratio to orjson's (each
    round times all back to back, so the ratio of one round shares its moment's noise)."""
    best = dict.fromkeys(runs, float("inf"))
    ratios: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds):
            took = {}
            # Rotate and alternate who goes first: an encoder meets the heap and caches the one
            # before it left behind.
            turn = round_ % len(names)
            order = names[turn:] + names[:turn]
            for name in order if (round_ // len(names)) % 2 == 0 else order[::-1]:
                start = clock()
                runs[name]()
                took[name] = clock() - start
                best[name] = min(best[name], took[name])
            for name in names:
                ratios[name].append(took[name] / took["orjson"])
    finally:
        gc.enable()
    return best, {name: statistics.median(values) for name, values in ratios.items()}


def _collected(only: str, repeat: int, selection: list[str]) -> int:
    """Instructions callgrind counts over a whole run of this script with ``--only``/``--repeat``."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    command += [__file__, "--only", only, "--repeat", str(repeat), *selection]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no callgrind total in: {done.stderr[-500:]}")
    return int(found.group(1))


def _instructions(args: argparse.Namespace) -> None:
    # Two runs that differ only in `extra` more passes over the corpus: their difference is the
    # encoding alone, free of interpreter start-up and corpus building.
    extra = args.instructions
    selections = [(name, ["--corpus", name]) for name in args.corpus]
    if args.fresh is not None:
        fresh = ["--fresh", str(args.fresh), "--fresh-count", str(args.fresh_count)]
        selections.append((f"fresh{args.fresh}", ["--corpus", *fresh]))
    kind_count = ["--kind-count", str(args.kind_count)]
    selections += [(f"kind-{kind}", ["--corpus", "--kind", kind, *kind_count]) for kind in args.kind]
    for name, selection in selections:
        selection += ["--newline", args.newline]
        count = _count(name, args.fresh_count, args.kind_count)
        per = {}
        for only in ("native", "orjson"):
            base = _collected(only, 1, selection)
            per[only] = (_collected(only, 1 + extra, selection) - base) / (extra * count)
        print(
            f"{name:6} native {per['native']:8.0f} instr/msg  orjson {per['orjson']:8.0f} instr/msg  "
            f"ratio {per['native'] / per['orjson']:.3f}  (orjson newline: {args.newline})",
            flush=True,
        )


def _count(name: str, fresh_count: int, kind_count: int) -> int:
    """Messages in the corpus ``name`` (a bench corpus, ``fresh<seed>`` or ``kind-<kind>``)."""
    if name.startswith("fresh"):
        return _fresh(int(name[5:]), fresh_count).count
    if name.startswith("kind-"):
        return kind_count
    return build(name).count  # type: ignore[arg-type]


# `--split`'s buckets of line sizes: (name suffix, smallest line, first size above).
_BUCKETS = (("<1k", 0, 1024), ("1-16k", 1024, 16384), ("16-64k", 16384, 65536), (">64k", 65536, 1 << 62))


def _split(corpus: Corpus) -> list[Corpus]:
    """``--split``: the corpus's messages as one corpus per bucket of line size (empty ones left out)."""
    lines = corpus.data.splitlines(keepends=True)
    parts = []
    for suffix, low, high in _BUCKETS:
        pairs = zip(lines, corpus.messages, strict=True)
        picked = [(line, m) for line, m in pairs if low <= len(line) < high]
        if picked:
            data = b"".join(line for line, _ in picked)
            parts.append(Corpus(f"{corpus.name}{suffix}", data, tuple(m for _, m in picked), ()))
    return parts


def _corpora(args: argparse.Namespace) -> list[Corpus]:
    """The corpora the arguments name, in order (with ``--split``, each as buckets of line sizes)."""
    corpora = [build(name) for name in args.corpus]
    if args.split:
        corpora = [part for corpus in corpora for part in _split(corpus)]
    if args.fresh is not None:
        corpora.append(_fresh(args.fresh, args.fresh_count))
        if args.shuffle is not None:
            corpora.append(_fresh(args.fresh, args.fresh_count, args.shuffle))
    corpora += [_kind(kind, args.kind_count) for kind in args.kind]
    return corpora


def main() -> None:
    """Parse the arguments, then time or repeat."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="*", choices=CORPORA, default=list(CORPORA))
    parser.add_argument("--fresh", type=int, metavar="SEED", help="also a corpus of another shape, this seed")
    parser.add_argument("--fresh-count", type=int, default=3000, metavar="N", help="messages of --fresh")
    parser.add_argument("--shuffle", type=int, metavar="SEED", help="also --fresh walked in a shuffled order")
    parser.add_argument("--kind", nargs="*", choices=_KINDS, default=[], help="also one-kind corpora")
    parser.add_argument("--kind-count", type=int, default=_KIND_MESSAGES, metavar="N", help="lists of --kind")
    parser.add_argument("--split", action="store_true", help="each bench corpus as buckets of line sizes")
    parser.add_argument("--newline", choices=("concat", "option"), default="concat")
    parser.add_argument("--drop", action="store_true", help="time with each line dropped at once")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--only", choices=("native", "orjson"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--instructions", type=int, metavar="N", help="callgrind: N extra passes")
    parser.add_argument(
        "--build", action="append", default=[], metavar="NAME=PATH", help="also time this _core build"
    )
    args = parser.parse_args()
    paths = getattr(_core, "_ffi_paths", dict)()
    print(f"python {sys.version.split()[0]}  ffi paths {paths}", flush=True)
    if args.instructions:
        _instructions(args)
        return
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    builds = _load_builds(args.build)
    for corpus in _corpora(args):
        runs = _runs(corpus, args.newline, builds=builds)
        if args.only is not None:
            for _ in range(args.repeat):
                runs[args.only]()
            continue
        _check(corpus, runs)
        best, median = _time(_runs(corpus, args.newline, drop=args.drop, builds=builds), args.rounds, clock)
        per = {key: value / corpus.count * 1e6 for key, value in best.items()}
        others = "".join(f"  {name} {per[name]:8.3f} us/msg median {median[name]:.3f}" for name in builds)
        print(
            f"{corpus.name:6} native {per['native']:8.3f} us/msg  orjson {per['orjson']:8.3f} us/msg  "
            f"best/best {best['native'] / best['orjson']:.3f}  median {median['native']:.3f}{others}  "
            f"(orjson newline: {args.newline}, {'dropped' if args.drop else 'kept'}, "
            f"MCPFRAME_PUBLIC_ONLY={os.environ.get('MCPFRAME_PUBLIC_ONLY', '')!r})",
            flush=True,
        )


if __name__ == "__main__":
    main()
