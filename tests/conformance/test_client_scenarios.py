"""The client side of the official conformance suite: `examples/conformance_client.py` under the harness.

The four scenarios that need no OAuth, one at a time (`sse-retry` measures reconnection timing, so it must
not share the machine with the other scenarios' processes): `conformance client --command <python
examples/conformance_client.py> --scenario <name>`. Every check must be SUCCESS (INFO entries are logs);
expected 10 checks in all: initialize 1, tools_call 1, elicitation-sep1034-client-defaults 5, sse-retry 3.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.conformance.harness import ROOT, describe, python_env, read_checks

SCENARIOS = {
    "initialize": {"mcp-client-initialization"},
    "tools_call": {"tool-add-numbers"},
    "elicitation-sep1034-client-defaults": {
        f"client-elicitation-sep1034-{kind}-default"
        for kind in ("string", "integer", "number", "enum", "boolean")
    },
    "sse-retry": {"client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"},
}
CLIENT = ROOT / "examples" / "conformance_client.py"


def _run(harness: list[str], scenario: str, out: Path) -> subprocess.CompletedProcess[str]:
    # The harness splits --command on single spaces and appends the server URL; ROOT has no spaces.
    command = f"{sys.executable} {CLIENT}"
    assert " " not in sys.executable
    assert " " not in str(CLIENT)
    argv = [*harness, "client", "--command", command, "--scenario", scenario, "-o", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=python_env(), check=False)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_client_scenario(conformance_harness: list[str], scenario: str, tmp_path: Path) -> None:
    result = _run(conformance_harness, scenario, tmp_path)
    checks = [c for c in read_checks(tmp_path) if c.get("status") != "INFO"]
    failing = [describe(c) for c in checks if c.get("status") != "SUCCESS"]
    assert not failing, "\n".join(failing) + "\n" + result.stdout[-3000:]
    assert {c["id"] for c in checks} == SCENARIOS[scenario], result.stdout[-3000:]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
