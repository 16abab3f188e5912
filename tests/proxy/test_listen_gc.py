"""`mcpframe proxy --listen` owns its process, so once listening it freezes the start-up heap out of the
cyclic GC and sets the serving thresholds, as `mcpframe serve` does (`mcpframe._gc`).

Freezing is process-wide, so the proxy runs in a child interpreter whose stderr is watched from inside:
when the proxy says where it listens (after its `ready` did its work), the child prints what the collector
sees and exits.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.proxy._listen_support import child_env
from tests.proxy.conftest import PEER

from mcpframe._gc import SERVER_THRESHOLDS

_CHILD = textwrap.dedent(
    """
    import gc, json, os, runpy, sys

    AT_START = gc.get_freeze_count()  # CPython 3.12 starts with some objects frozen already


    class Watch:
        def __init__(self, inner):
            self.inner = inner

        def write(self, text):
            if "Streamable HTTP on" in text:
                seen = {"frozen": gc.get_freeze_count() - AT_START, "thresholds": list(gc.get_threshold())}
                print(json.dumps(seen), flush=True)
                os._exit(0)
            return self.inner.write(text)

        def __getattr__(self, name):
            return getattr(self.inner, name)


    sys.stderr = Watch(sys.stderr)
    sys.argv = ["mcpframe", "proxy", "--listen", "http://127.0.0.1:0/mcp", "--", *sys.argv[1:]]
    runpy.run_module("mcpframe", run_name="__main__")
    """
)


def test_the_listening_proxy_freezes_its_start_up_heap() -> None:
    env = child_env()
    env.pop("MCPFRAME_GC_FREEZE", None)
    env.pop("MCPFRAME_GC_THRESHOLDS", None)
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, *PEER],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["frozen"] > 0
    assert tuple(seen["thresholds"]) == SERVER_THRESHOLDS
