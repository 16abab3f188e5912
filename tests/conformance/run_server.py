"""`scripts/conformance.sh server`: serve the everything example over HTTP and run every server scenario.

Prints the score and every check that is not a pass; exits 1 if there is any (FAILURE, WARNING, SKIPPED).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.conformance.harness import (
    describe,
    install,
    read_checks,
    run_server_suite,
    serve_everything_http,
    summarize,
)


def main() -> int:
    """Run the suite once; 0 when every check passed."""
    install()
    with tempfile.TemporaryDirectory(prefix="mcpframe-conformance-") as tmp, serve_everything_http() as url:
        result = run_server_suite(url, Path(tmp))
        checks = read_checks(Path(tmp))
    passed, bad = summarize(checks)
    print(f"server conformance against {url}: {passed} passed, {len(bad)} not passed")
    for check in bad:
        print("  " + describe(check))
    if result.returncode != 0 and not bad:
        print(result.stdout[-4000:], result.stderr[-4000:], sep="\n")
    return 0 if not bad and passed > 0 and result.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
