"""An allocation failure while the native decoder builds objects raises MemoryError (or costs the
frame a FrameError) and never aborts the process. Each case runs in a subprocess, so an abort
fails the test instead of killing pytest."""

import os
import subprocess
import sys
import textwrap

import pytest

try:
    import _testcapi  # noqa: F401
except ImportError:  # pragma: no cover - CPython builds here have it
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("needs _testcapi.set_nomemory", allow_module_level=True)

SCRIPT = textwrap.dedent(
    """
    import _testcapi
    import mcpframe._core as N

    frames = [b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"a":[1,2]}}' % k
              for k in range(4)]
    frames += [b'{"jsonrpc":"2.0","id":"s%d","result":{"x":1}}' % k for k in range(2)]
    frames += [b'{"jsonrpc":"2.0","id":%d,"error":{"code":1,"message":"m"}}' % k for k in range(2)]
    frames += [b'{"jsonrpc":"2.0","method":"notifications/x"}']
    batch = b"[" + b",".join(frames) + b"]"
    stream = b"\\n".join(frames) + b"\\n"
    memory_errors = 0
    for lazy in (False, True):
        for which in ("decode", "feed"):
            dec = N.Decoder(lazy=lazy)
            for start in range(300):
                # a run of failed allocations, long enough to fail the frame's FrameError too
                # and short enough for the interpreter itself to go on afterwards
                _testcapi.set_nomemory(start, start + 30)
                try:
                    if which == "decode":
                        N.decode(batch, lazy=lazy)
                    else:
                        dec.feed(stream)
                except MemoryError:
                    memory_errors += 1
                finally:
                    _testcapi.remove_mem_hooks()
            # the decoder is usable afterwards
            out = N.decode(batch, lazy=lazy) if which == "decode" else dec.feed(stream)
            assert len(out) == len(frames), out
    print("memory_errors", memory_errors)
    """
)


def test_allocation_failures_do_not_abort() -> None:
    env = dict(os.environ, RUST_BACKTRACE="0")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "memory_errors" in done.stdout
    count = int(done.stdout.split("memory_errors")[1].split()[0])
    assert count > 0, done.stdout
