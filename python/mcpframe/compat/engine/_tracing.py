"""Whether OpenTelemetry would record anything, answered per request in well under a microsecond.

The SDK's ``OpenTelemetryMiddleware`` is a no-op until a tracer provider is installed; the engine leaves
it out of the chain while that is so (see ``_server._Kernel``). ``trace.get_tracer_provider()`` answers
that, but while no provider is set it looks ``OTEL_PYTHON_TRACER_PROVIDER`` up in ``os.environ`` on every
call (a few microseconds: a key encoding and a caught ``KeyError``). OpenTelemetry sets its global
provider at most once per process, so:

- ``prime()`` (called when an engine server is built) asks ``get_tracer_provider()`` once, which loads a
  provider named by that environment variable if there is one;
- ``quiet()`` then reads the module's provider slot: empty means nothing was installed (quiet); once a
  provider is there it can never change, so its answer is kept.

A provider named by the environment variable only after the engine was built is not picked up (set it
before start-up, or install it with ``trace.set_tracer_provider``, which is seen at the next request).
Should a future OpenTelemetry drop the slot, ``quiet()`` asks ``get_tracer_provider()`` every time.
"""

from __future__ import annotations

from opentelemetry import trace

__all__ = ["prime", "quiet"]

_QUIET_TYPES = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
_NO_SLOT = object()
_settled: list[bool] = []  # the answer once a provider is installed (it cannot change afterwards)


def prime() -> None:
    """Load a provider named by ``OTEL_PYTHON_TRACER_PROVIDER``, as the SDK's first span would."""
    trace.get_tracer_provider()


def quiet() -> bool:
    """True while no tracer provider that records spans is installed."""
    if _settled:
        return _settled[0]
    provider = getattr(trace, "_TRACER_PROVIDER", _NO_SLOT)
    if provider is None:
        return True
    if provider is _NO_SLOT:
        return isinstance(trace.get_tracer_provider(), _QUIET_TYPES)
    _settled.append(isinstance(provider, _QUIET_TYPES))
    return _settled[0]
