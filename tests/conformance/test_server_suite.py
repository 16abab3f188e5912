"""The official MCP conformance suite (pinned 0.1.16), every server scenario, against our HTTP servers
(uvicorn, and mcpframe's lean one).

Every check must be a SUCCESS (INFO lines are logging): a FAILURE, WARNING or SKIPPED fails the test and is
listed. 47 successes is the most 0.1.16 can give.
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance.harness import describe, read_checks, run_server_suite, summarize

MAX_SCORE = 47
SCENARIOS = 32


def test_every_server_check_passes(
    conformance_harness: list[str], everything_http_url: str, tmp_path: Path
) -> None:
    result = run_server_suite(everything_http_url, tmp_path)
    checks = read_checks(tmp_path)
    passed, bad = summarize(checks)
    listing = "\n".join(describe(check) for check in bad)
    assert not bad, f"{len(bad)} checks did not pass:\n{listing}"
    assert len({check["scenario"] for check in checks}) == SCENARIOS, result.stdout[-3000:]
    assert passed == MAX_SCORE, result.stdout[-3000:]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
