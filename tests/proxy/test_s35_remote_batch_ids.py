"""A batch through `mcpframe proxy URL` whose request reuses an id already in use (repeated in the batch,
or held by a request in flight or by another open batch) is still answered with one complete array: the
duplicate gets a `-32600` error inside it (the stdio proxy's text) and is not forwarded; the others are
answered as usual."""

from __future__ import annotations

from typing import Any

import pytest
from tests.proxy._remote_support import until
from tests.proxy.test_remote_batches import _call, _proxied, _texts

pytestmark = pytest.mark.anyio

VERSIONS = ["2025-03-26", "2025-11-25"]  # posted whole / element by element


def _forever(rid: Any) -> dict[str, Any]:
    params = {"name": "forever", "arguments": {}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _split(array: list[Any]) -> tuple[dict[Any, str], list[dict[str, Any]]]:
    """The array's results (id -> text) and its errors."""
    return _texts([a for a in array if "result" in a]), [a for a in array if "error" in a]


def _in_use(error: dict[str, Any], rid: Any) -> None:
    assert error["id"] == rid
    assert error["error"]["code"] == -32600
    assert error["error"]["message"] == f"Invalid Request: id {rid!r} is already in use"


@pytest.mark.parametrize("version", VERSIONS)
async def test_an_id_repeated_in_a_batch_gets_its_error_inside_the_one_complete_array(version: str) -> None:
    async with _proxied(version, lane=True) as (client, posted):
        await client.write([_call(1, "a"), _call(1, "again"), _call(2, "b")])  # type: ignore[arg-type]
        array = await client.next_line()
        assert isinstance(array, list)
        results, errors = _split(array)
        assert results == {1: "a", 2: "b"}  # the first of the two went; the other requests answered
        assert len(errors) == 1
        _in_use(errors[0], 1)
        assert len(array) == 3
        assert not any(b"again" in body for body in posted)  # the duplicate was not forwarded
        assert client.lines == [array]


@pytest.mark.parametrize("opened_by", ["batch", "request"])
@pytest.mark.parametrize("version", VERSIONS)
async def test_an_id_held_open_reused_by_a_second_batch_is_refused_in_that_batch(
    version: str, opened_by: str
) -> None:
    async with _proxied(version, lane=True) as (client, posted):
        if opened_by == "batch":
            await client.write([_forever(7), _call(5, "five")])  # type: ignore[arg-type]
        else:
            await client.write(_forever(7))
        await until(lambda: any(b"forever" in body for body in posted))
        await client.write([_call(7, "seven"), _call(8, "eight")])  # type: ignore[arg-type]
        array = await client.next_line()
        assert isinstance(array, list)
        results, errors = _split(array)
        assert results == {8: "eight"}
        assert len(errors) == 1
        _in_use(errors[0], 7)
        assert not any(b"seven" in body for body in posted)
        assert client.lines == [array]  # the first holder of id 7 is still open: nothing answered it
