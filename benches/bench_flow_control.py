"""The flow-control benchmark (`flow_control.py`) once per contender with tiny counts, as a test.

Each contender (mcpframe's server with the native core, with the python core, the hand-written floor) is
flooded without a client window: pipelined `def` and `async def` calls, a client that stops reading while it
offers requests and then reads them all, and a longer pipelined run. Every request must get its result:
none refused ("Server busy"), none failed, none lost. Counts are tiny (seconds per contender); figures are
the script's job (`python benches/flow_control.py`).
"""

from __future__ import annotations

import os

import pytest

from flow_control import KINDS, Config, measure, table, unavailable

TINY = Config(calls=3_000, bursts=1, sequential=20, offer=30_000, long=3_000, rounds=1, quick=True)
"""Past the session's 1,024 requests in flight, and more answers than the pipes hold while nobody reads."""


@pytest.mark.parametrize("key", list(KINDS))
def test_every_request_gets_its_result(key: str) -> None:
    kind = KINDS[key]
    if (why := unavailable(kind)) is not None:
        if os.environ.get("MCPFRAME_REQUIRE_NATIVE") or os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    [row] = measure([kind], TINY)
    text = table([row], TINY)
    floods = [(f"{tool} {n}", f) for tool, runs in row.floods.items() for n, f in enumerate(runs)]
    assert len(floods) == 3
    for name, flood in [*floods, ("held", row.held), ("long", row.long)]:
        assert flood is not None, name
        tally = flood.tally
        assert (tally.results, tally.refused, tally.errors) == (tally.count, 0, 0), f"{name}\n{text}"
    assert [len(run) for run in row.latencies] == [TINY.sequential]
    assert row.held is not None
    assert 0 < row.held.written_when_held <= TINY.offer
    assert "QUICK" in text
