"""Instructions per `tools/call` of a stdio server answering one call at a time: callgrind on the child.

    python benches/stdio_one_instructions.py [--calls 1000] [--tool echo|aecho] [--pythonpath DIR]
        [--keep PREFIX] [--strace | --cpu]

The stdio child of `mcpframe proxy --listen` (`bench_proxy_http.py --serve-stdio`: mcpframe's `Server` with
its `echo` tool) is driven here the way the proxy drives it under one HTTP session: a raw pipe client
writes one request, reads its answer, then writes the next. The child runs under `valgrind
--tool=callgrind --instr-atstart=no`; after `initialize`, `notifications/initialized` and `WARM_UP` calls
(every answer checked), counting is switched on (`callgrind_control -i on`) for `--calls` calls only, and
the child's instructions divided by `--calls` are printed: its user-space work per call when it wakes for
every request (read, decode, handle, encode, write, sleep), which a pipelined benchmark does not show.
`--strace`: instead of callgrind, `strace -c -f` on the same calls (start-up and warm-up included, so
divide the counts by the calls made: `WARM_UP + --calls`). `--cpu`: no valgrind, the child's CPU time per
call (`/proc` utime + stime, its worker threads and the kernel's part included) over `--calls` calls.
`--tool aecho`: the same tool as `async def` (answered on the event loop, no worker thread; the default
`echo` is a `def` tool, whose call goes to a worker thread and back). `--pythonpath DIR/python` runs another
checkout's child (`DIR/benches/bench_proxy_http.py` on `DIR/python`, with its native extension) for a
before/after. Needs Debian's `valgrind` (and `strace`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

from servers.callgrind import WARM_UP, counted_total  # noqa: E402

PROTOCOL = "2025-11-25"


class Pipes:
    """The child's stdin and stdout, one request at a time (each answer read whole and checked)."""

    def __init__(self, child: subprocess.Popen[bytes], tool: str) -> None:
        self.tool = tool
        assert child.stdin is not None
        assert child.stdout is not None
        self.write_fd = child.stdin.fileno()
        self.read_fd = child.stdout.fileno()
        self.rest = b""

    def line(self) -> dict[str, object]:
        """The next line the child writes, decoded."""
        while b"\n" not in self.rest:
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise AssertionError("the child ended before answering")
            self.rest += chunk
        line, self.rest = self.rest.split(b"\n", 1)
        return orjson.loads(line)  # type: ignore[no-any-return]

    def ask(self, message: dict[str, object]) -> dict[str, object] | None:
        """Write `message`; its answer when it has an id (the next line the child writes)."""
        os.write(self.write_fd, orjson.dumps(message) + b"\n")
        if "id" not in message:
            return None
        answer = self.line()
        if answer.get("id") != message["id"] or "result" not in answer:
            raise AssertionError(f"{message!r} answered {answer!r}")
        return answer

    def call(self, rid: int) -> None:
        params = {"name": self.tool, "arguments": {"text": f"t{rid}"}}
        answer = self.ask({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
        assert answer is not None
        if answer["result"] != {"content": [{"type": "text", "text": f"t{rid}"}]}:
            raise AssertionError(f"{self.tool}(t{rid}) answered {answer!r}")

    def open(self) -> None:
        client = {"name": "bench-stdio-one", "version": "1"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client}
        self.ask({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params})
        self.ask({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _switch(pid: int, state: str) -> None:
    subprocess.run(["callgrind_control", "-i", state, str(pid)], check=True, capture_output=True)


def _cpu(pid: int) -> tuple[float, int]:
    """CPU seconds process `pid` has used (utime + stime, every thread), and its threads' context switches
    (voluntary and not) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    switches = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:  # a thread that ended meanwhile
            continue
        # `voluntary_ctxt_switches:` and `nonvoluntary_ctxt_switches:`
        switches += sum(int(line.split()[1]) for line in lines if "ctxt_switches:" in line)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), switches


def _run(wrapper: list[str], tree: Path, calls: int, tool: str, *, counted: bool) -> tuple[float, int]:
    """Start `tree`'s child under `wrapper`, open it, warm it up, then make `calls` calls (counted: with
    callgrind's instrumentation on); its stdin is closed at the end, and it is waited for. Returns the
    child's CPU seconds and context switches over those calls (meaningful without a wrapper)."""
    # the script puts its own tree's python/ first on its path: the tree's script runs the tree's code
    child_cmd = [sys.executable, str(tree / "benches" / "bench_proxy_http.py"), "--serve-stdio"]
    env = {**os.environ, "PYTHONPATH": str(tree / "python"), "PYTHONHASHSEED": "0"}
    child = subprocess.Popen([*wrapper, *child_cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        pipes = Pipes(child, tool)
        pipes.open()
        for rid in range(WARM_UP):
            pipes.call(rid)
        if counted:
            _switch(child.pid, "on")
        before = _cpu(child.pid)
        for rid in range(WARM_UP, WARM_UP + calls):
            pipes.call(rid)
        after = _cpu(child.pid)
        used = after[0] - before[0], after[1] - before[1]
        if counted:
            _switch(child.pid, "off")
    finally:
        assert child.stdin is not None
        child.stdin.close()  # a stdio server's cue to exit
        child.wait(timeout=60)
    return used


def instructions(calls: int, tree: Path, keep: str | None, tool: str = "echo") -> float:
    """The child's instructions per call (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="mcpframe-cg-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
        _run(valgrind, tree, calls, tool, counted=True)
        return counted_total(tmp, keep) / calls


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--pythonpath", help="another checkout's python/ folder, beside its benches/")
    parser.add_argument("--keep", help="keep callgrind's output files as KEEP.<name> (callgrind_annotate)")
    parser.add_argument("--tool", choices=("echo", "aecho"), default="echo", help="def or async def")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--strace", action="store_true", help="strace -c -f instead of callgrind")
    how.add_argument("--cpu", action="store_true", help="the child's CPU time per call instead")
    args = parser.parse_args(argv)
    tree = Path(args.pythonpath).resolve().parent if args.pythonpath else ROOT
    if args.strace:
        _run(["strace", "-c", "-f"], tree, args.calls, args.tool, counted=False)
        print(f"strace: {WARM_UP + args.calls} calls (and the start-up) above")
        return 0
    if args.cpu:
        seconds, switches = _run([], tree, args.calls, args.tool, counted=False)
        print(
            f"stdio server one call at a time, {args.tool}: {1e6 * seconds / args.calls:.1f} us CPU and "
            f"{switches / args.calls:.2f} context switches per call"
        )
        return 0
    per_call = instructions(args.calls, tree, args.keep, args.tool)
    print(f"stdio server one call at a time, {args.tool}: {per_call:,.0f} instructions per call")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
