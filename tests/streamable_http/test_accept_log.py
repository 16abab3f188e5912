"""Out of file descriptors, asyncio logs every failed accept() with its traceback (thousands a second under
uvicorn's backlog): `serve_http` lets one such record through a minute, saying how many it left out, and
leaves every other record alone."""

from __future__ import annotations

import logging

import pytest

from mcpframe.http import accept_log
from mcpframe.http.accept_log import AcceptFailures, quiet_accept_failures

_OUT = "socket.accept() out of system resource\nsocket: <asyncio.TransportSocket fd=6>"


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, (), None)


def test_one_record_a_minute_passes_and_the_next_one_counts_those_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(accept_log.time, "monotonic", lambda: clock[0])
    quiet = AcceptFailures(every=60.0)
    passed = [quiet.filter(_record(_OUT)) for _ in range(2048)]
    assert passed.count(True) == 1
    assert passed[0] is True
    clock[0] += 59.0
    assert not quiet.filter(_record(_OUT))
    clock[0] += 1.0
    later = _record(_OUT)
    assert quiet.filter(later)
    assert later.getMessage() == (
        "socket.accept() out of system resource (2048 more since the last such record left out)"
        "\nsocket: <asyncio.TransportSocket fd=6>"
    )
    again = _record(_OUT)
    clock[0] += 60.0
    assert quiet.filter(again)
    assert again.getMessage() == _OUT  # nothing was left out since


def test_every_other_record_passes_untouched() -> None:
    quiet = AcceptFailures()
    assert quiet.filter(_record(_OUT))
    for message in ("Task exception was never retrieved", "socket.send() raised exception.", "accept"):
        record = _record(message)
        assert quiet.filter(record)
        assert record.getMessage() == message


def test_installed_once_on_the_asyncio_logger() -> None:
    logger = logging.getLogger("asyncio")
    before = list(logger.filters)
    try:
        quiet_accept_failures()
        quiet_accept_failures()
        assert sum(isinstance(f, AcceptFailures) for f in logger.filters) == 1
    finally:
        logger.filters[:] = before
