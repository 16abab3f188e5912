"""The official conformance suite's `auth/*` client scenarios, played by `examples/conformance_client.py`.

The 22 scenarios of the pinned harness (0.1.16) come in four suites (`auth`: the 2025-11-25 ones,
`backcompat`: 2025-03-26, `draft`, `extensions`: client credentials and SEP-990); the harness runs each
suite's scenarios in parallel, the suites run one after another in one module fixture (~10 s on two idle
cores, ~13 s of CPU), each scenario a test of its own. Every check must be SUCCESS (INFO entries are
logs). The client builds its OAuth provider from the scenario name and `MCP_CONFORMANCE_CONTEXT`
(`examples/conformance_auth.py`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conformance.harness import ROOT, Check, describe, python_env

CLIENT = ROOT / "examples" / "conformance_client.py"
SUITES = {
    "auth": [
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
        "auth/basic-cimd",
        "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined",
        "auth/scope-step-up",
        "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
        "auth/pre-registration",
    ],
    "backcompat": ["auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"],
    "draft": ["auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported"],
    "extensions": [
        "auth/client-credentials-jwt",
        "auth/client-credentials-basic",
        "auth/cross-app-access-complete-flow",
    ],
}
SCENARIOS = [name for names in SUITES.values() for name in names]
_STAMP = re.compile(r"-\d{4}-\d\d-\d\dT[\d-]+Z$")  # the harness suffixes each result directory with a time


def _scenario(checks_json: Path, root: Path) -> str:
    return _STAMP.sub("", checks_json.parent.relative_to(root).as_posix())


@pytest.fixture(scope="module")
def auth_results(
    conformance_harness: list[str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[Check]]:
    """Run the four suites; every scenario's checks, by scenario name (`""`: the harness's logs)."""
    out = tmp_path_factory.mktemp("auth")
    # The harness splits --command on single spaces and appends the server URL; ROOT has no spaces.
    assert " " not in sys.executable
    assert " " not in str(CLIENT)
    command = f"{sys.executable} {CLIENT}"
    logs = []
    # One suite after another (the auth suite alone starts 14 clients at once); a generous harness timeout
    # per client, since a loaded machine makes each one's start-up slow.
    for suite in SUITES:
        argv = [*conformance_harness, "client", "--command", command, "--suite", suite, "--timeout", "120000"]
        done = subprocess.run(
            [*argv, "-o", str(out / suite)],
            env=python_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
            check=False,
        )
        logs.append(done.stdout)
    results: dict[str, list[Check]] = {"": [Check(log=log) for log in logs]}
    for path in sorted(out.glob("*/**/checks.json")):
        suite_dir = path.relative_to(out).parts[0]
        name = _scenario(path, out / suite_dir)
        results[name] = [Check(entry, scenario=name) for entry in json.loads(path.read_text())]
    return results


def test_the_pinned_harness_has_these_auth_scenarios(conformance_harness: list[str]) -> None:
    listed = subprocess.run(
        [*conformance_harness, "list"], capture_output=True, text=True, timeout=60, check=True
    )
    names = set(re.findall(r"auth/[a-z0-9-]+", listed.stdout + listed.stderr))
    assert names == set(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_auth_scenario(auth_results: dict[str, list[Check]], scenario: str) -> None:
    logs = "\n".join(c["log"][-2000:] for c in auth_results[""])
    checks = auth_results.get(scenario)
    assert checks, f"{scenario}: no results\n{logs}"
    judged = [c for c in checks if c.get("status") != "INFO"]
    failing = [describe(c) for c in judged if c.get("status") != "SUCCESS"]
    assert judged, f"{scenario}: only INFO entries"
    assert not failing, "\n".join(failing)
