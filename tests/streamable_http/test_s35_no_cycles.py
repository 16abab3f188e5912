"""A `def` tool's answer on the lean server, JSON or SSE, leaves no reference cycle behind: its `Pending`
exchange is freed by its reference count as the answer ends (the parked JSON answer lets go of it, the
light SSE writer drops its `light` and `on_end`), not left for the cyclic collector."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import anyio
import pytest

from mcpframe.http import fast_pending, sse_wire

from ._live_support import GatedTools, serving, until
from ._server_support import call, messages

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("mode", ["auto", "resumable"])
async def test_a_def_answer_leaves_its_exchange_to_its_reference_count(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sse_wire, "HOLD", 60.0)  # the head waits for the answer: the light path, always
    made: list[weakref.ref[Any]] = []
    real = fast_pending.Pending.__init__

    def recorded(self: fast_pending.Pending, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(fast_pending.Pending, "__init__", recorded)
    tools = GatedTools("no-cycles")
    async with serving(tools, response_mode=mode) as (url, _, client, headers):
        gc.collect()
        gc.disable()  # from here only reference counts free anything
        try:
            with anyio.fail_after(10):
                for rid in (2, 3):
                    response = await client.post(
                        url, json=call("echo", {"text": f"e{rid}"}, rid=rid), headers=headers
                    )
                    got = response.json() if mode == "auto" else messages(response.text)[-1]
                    assert got["result"]["content"] == [{"type": "text", "text": f"e{rid}"}]
                await until(lambda: len(made) == 2 and all(ref() is None for ref in made))
        finally:
            gc.enable()
    assert len(made) == 2
