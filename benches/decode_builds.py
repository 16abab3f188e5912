"""Builds of ``_core`` side by side on the strict streaming decode, against msgspec's per-line envelope.

Usage: ``python benches/decode_builds.py [--corpus small|mixed|large|generated] [--slice-mb N]
[--rounds 21] [--eager] [--instructions] NAME=PATH [NAME=PATH ...]``.

Each ``NAME=PATH`` is a copy of ``_core``'s ``.so`` (one build before a change, one after, ...), loaded
beside the others in this one process, so that every build and ``split + msgspec Struct/Raw`` per line
run in the same rounds on the same chunks: a change is measured against its base without the drift of a
shared machine between two processes. The method is ``mcpframe.bench.strict``'s: 64 KiB chunks
(``--chunk``), every contender's values checked against the stdlib ``json`` first, the cyclic GC off
for all (one ``gc.collect()`` before each run), the order rotated from round to round, each chunk's
messages counted and dropped before the next. It prints per build the median CPU time of one pass, the
fastest, and msgspec's median over the build's (issue 14's "lazy >= 2.5x faster than msgspec" is that
figure >= 2.5); ``--eager`` times the eager decoders instead of the lazy ones.

``--instructions`` counts instructions instead, with valgrind's callgrind: one child per build (and one
that decodes nothing), each loading every build and reading the same chunks, so that start-up cancels
out exactly; it prints each build's instructions per message (separate processes per build, as
``mcpframe bench --clock instructions`` runs them, differ in start-up by tens of instructions per message
of the small corpus, the size of the changes measured). ``--slice-mb`` defaults to 8 then.

``--corpus generated`` reads the cached generated corpus (``mcpframe.bench.generated``, seed 1, made on
first use), its first ``--slice-mb`` MiB cut at a line end (0, the default, for all of it).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from mcpframe.bench import generated, strict
from mcpframe.bench.corpus import CorpusName


def _load(spec: str) -> tuple[str, ModuleType]:
    name, _, path = spec.partition("=")
    if not name or not path or name == "msgspec":
        raise SystemExit(f"a build is NAME=PATH (a name other than msgspec): {spec!r}")
    found = importlib.util.spec_from_file_location("mcpframe._core", path)
    if found is None or found.loader is None:
        raise SystemExit(f"not an extension module: {path}")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return name, module


def _feeder(template: strict.Feeder, name: str, module: ModuleType, lazy: bool) -> strict.Feeder:
    def start() -> tuple[strict.Feed, strict.Close]:
        decoder = module.Decoder(lazy=lazy)
        return decoder.feed, decoder.close

    return dataclasses.replace(template, key=name, label=name, start=start)


def _source(corpus: str, slice_mb: int, chunk: int) -> strict.Source:
    if corpus == "generated":
        limit = slice_mb << 20 if slice_mb else None
        return strict.from_file("generated", generated.load().path, chunk, limit)
    name: CorpusName = corpus  # type: ignore[assignment]
    return strict.builtin(name, chunk)


_CHILD = "--callgrind-child"


def _child(argv: list[str]) -> None:
    """Under callgrind: load every build, read the chunks, decode them with build ``which`` (-1: none)."""
    corpus, slice_mb, chunk, which, eager, *specs = argv
    modules = [_load(spec)[1] for spec in specs]
    source = _source(corpus, int(slice_mb), int(chunk))
    gc.disable()
    count = 0
    if int(which) >= 0:
        decoder = modules[int(which)].Decoder(lazy=eager != "1")
        count = sum(len(decoder.feed(chunk)) for chunk in source.chunks) + len(decoder.close())
    print(count)


def _instructions(args: argparse.Namespace, source: strict.Source) -> None:
    """Each build's instructions per message, counted by callgrind (see the module's docstring)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    slice_mb = args.slice_mb or 8
    head = [args.corpus, str(slice_mb), str(args.chunk)]
    tail = ["1" if args.eager else "0", *args.builds]
    with tempfile.TemporaryDirectory() as scratch:

        def run(which: int) -> tuple[int, int]:
            out = Path(scratch) / f"callgrind.{which}"
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
            command += [__file__, _CHILD, *head, str(which), *tail]
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
            totals = [
                line for line in out.read_text().splitlines() if line.startswith(("summary:", "totals:"))
            ]
            return int(totals[0].split()[1]), int(done.stdout.split()[-1])

        base, _ = run(-1)
        mode = "eager" if args.eager else "lazy"
        print(f"{source.name} (first {slice_mb} MiB if generated), {args.chunk}-byte chunks, instructions")
        for which, spec in enumerate(args.builds):
            total, count = run(which)
            name = spec.partition("=")[0]
            print(f"  {name} ({mode}): {(total - base) / count:.1f} per message ({count} messages)")


def main() -> None:
    if sys.argv[1:2] == [_CHILD]:
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", metavar="NAME=PATH")
    parser.add_argument("--corpus", default="small", choices=["small", "mixed", "large", "generated"])
    parser.add_argument("--slice-mb", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--chunk", type=int, default=generated.CHUNK)
    parser.add_argument("--eager", action="store_true", help="time the eager decoders")
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind")
    args = parser.parse_args()

    if args.instructions:
        source = _source(args.corpus, args.slice_mb or 8, args.chunk)
        _instructions(args, source)
        return
    source = _source(args.corpus, args.slice_mb, args.chunk)
    available = strict.feeders()
    template = available["native-eager" if args.eager else "native-lazy"]
    chosen = [available["msgspec-raw-line"]]
    chosen += [_feeder(template, *_load(spec), lazy=not args.eager) for spec in args.builds]
    for feeder in chosen:
        problem = strict.check(feeder, source)
        if problem is not None:
            raise SystemExit(f"{feeder.label}: {problem}")

    cpu: dict[str, list[float]] = {f.key: [] for f in chosen}
    enabled = gc.isenabled()
    gc.disable()
    try:
        for done in range(args.rounds):
            shift = done % len(chosen)
            for feeder in chosen[shift:] + chosen[:shift]:
                gc.collect()
                start = time.process_time()
                count = strict.run_once(feeder, source.chunks)
                cpu[feeder.key].append(time.process_time() - start)
                if count != source.messages:
                    raise SystemExit(f"{feeder.label} decoded {count} of {source.messages} messages")
    finally:
        if enabled:
            gc.enable()

    base = statistics.median(cpu["msgspec-raw-line"])
    mode = "eager" if args.eager else "lazy"
    print(f"{source.name}: {source.messages} messages, {source.nbytes} bytes, {args.rounds} rounds, CPU")
    print(f"  split + msgspec Struct/Raw per line: median {base * 1e3:.2f} ms")
    for feeder in chosen[1:]:
        times = cpu[feeder.key]
        median = statistics.median(times)
        print(
            f"  {feeder.key} ({mode}): median {median * 1e3:.2f} ms, fastest {min(times) * 1e3:.2f} ms,"
            f" msgspec / it {base / median:.3f}x"
        )


if __name__ == "__main__":
    main()
