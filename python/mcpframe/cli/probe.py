"""`mcpframe probe -- command args` / `mcpframe probe URL`: is this MCP server alive, and what does it offer?

The probe connects (a stdio child, or `mcpframe.http.connect` with its automatic choice between Streamable
HTTP and the legacy SSE transport), handshakes with the client's own era negotiation, lists tools,
resources, resource templates and prompts (every page; a list the server has no capability for is skipped)
and prints the negotiated revision, server info, capabilities, counts, names and how long each step took;
`--json` prints the same as one JSON object. When anything fails the exit status is 1 and stderr has ONE line
saying why (timeout, non-JSON on the child's stdout, the child exited, handshake refused, HTTP 401,
connection refused); 2 is a usage error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio

from mcpframe import core, jsonrpc, protocol
from mcpframe.client import Client
from mcpframe.client.connection import IncompatibleServerError
from mcpframe.session.errors import ConnectionClosed, JSONRPCError
from mcpframe.transports.base import Transport
from mcpframe.transports.process import ProcessTransport, spawn

__all__ = ["ProbeFailure", "probe_main"]

_T = TypeVar("_T")
_LISTS = (
    ("tools", "name", "tools", protocol.TOOLS_LIST),
    ("resources", "uri", "resources", protocol.RESOURCES_LIST),
    # a server whose only resource is `@server.resource("notes://{name}")` lists no resource, only this
    ("templates", "uriTemplate", "resources", protocol.RESOURCES_TEMPLATES_LIST),
    ("prompts", "name", "prompts", protocol.PROMPTS_LIST),
)
"""What is listed: the report's key, the item's name field, the capability it needs, the method."""


class ProbeFailure(Exception):
    """Why the probe failed, as the one line to print."""


class _Watched:
    """A child's transport that notices the first frame that is not JSON-RPC (a server printing to stdout).

    It ends the stream there: the probe fails at once with what was seen, instead of waiting for an answer
    that the garbage may have replaced.
    """

    def __init__(self, inner: ProcessTransport) -> None:
        self.inner = inner
        self.garbage: bytes | None = None
        self._decoder = core.Decoder(lazy=True)
        self._tail = b""

    async def receive(self) -> bytes:
        # Only whole lines are passed on, so the session never sees a part of the garbage either.
        while True:
            chunk = await self.inner.receive()
            if not chunk:
                whole, self._tail = self._tail, b""
                return b"" if self._bad(self._decoder.close()) else whole
            cut = chunk.rfind(b"\n") + 1
            if not cut:  # no line ends in it yet
                self._tail += chunk
                continue
            whole, self._tail = self._tail + chunk[:cut], chunk[cut:]
            if self._bad(self._decoder.feed(whole)):
                return b""
            if whole:
                return whole

    def _bad(self, items: list[Any]) -> bool:
        for item in items:
            if isinstance(item, core.FrameError):
                self.garbage = item.raw if item.raw is not None else item.preview
                return True
        return False

    async def send(self, data: bytes) -> None:
        await self.inner.send(data)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Target:
    """What to probe: a command (stdio) or a URL (HTTP), and what the stdio child did."""

    def __init__(self, command: list[str] | None, url: str | None, headers: dict[str, str]) -> None:
        self.command, self.url, self.headers = command, url, headers
        self.watched: _Watched | None = None
        self.witness: Any = None  # probe_http.Witness for a URL
        self.spawn_ms: float | None = None
        self.step = "handshake"  # the step in progress, for the failure line

    @asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        """The client, not entered yet (entering it is the handshake)."""
        if self.url is None:
            yield Client(opener=self._open, timeout=None)
            return
        from .probe_http import open_client  # noqa: PLC0415 - httpx (the http extra): only for a URL

        client, http, self.witness = open_client(self.url, self.headers)
        async with http:
            yield client

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Transport]:
        assert self.command is not None
        start = time.perf_counter()
        try:
            inner = await spawn(self.command[0], self.command[1:])
        except OSError as exc:
            raise ProbeFailure(f"cannot run {self.command[0]!r}: {exc.strerror or exc}") from exc
        self.spawn_ms = (time.perf_counter() - start) * 1000.0
        self.watched = _Watched(inner)
        try:
            yield self.watched
        finally:
            await inner.aclose()

    def explain(self, exc: BaseException, step: str) -> str:
        """The one line for ``exc``, raised during ``step``: what the wire showed first, then the error."""
        if self.watched is not None and self.watched.garbage is not None:
            seen = self.watched.garbage[:120].decode("utf-8", errors="replace")
            return (
                f"non-JSON on the server's stdout during {step}: {seen!r} (stdout carries only the protocol)"
            )
        said = self.witness.reason(step) if self.witness is not None else None
        if said is not None:
            return str(said)
        leaves = [e for e in _chain(exc) if not isinstance(e, BaseExceptionGroup)]
        exited = self.watched.inner.returncode if self.watched is not None else None
        return _reason(leaves, step, exited)


def _reason(leaves: list[BaseException], step: str, exited: int | None) -> str:
    """Our own failure, else a timeout, else the server's refusal, else the child's exit, else the rest."""
    for leaf in leaves:
        if isinstance(leaf, ProbeFailure):
            return str(leaf)
    if any(isinstance(leaf, TimeoutError) and not isinstance(leaf, JSONRPCError) for leaf in leaves):
        return f"timeout: no answer to {step}"
    for leaf in leaves:  # the server's own answer (the child may have exited since: we closed its stdin)
        refused = isinstance(leaf, JSONRPCError) and leaf.code != jsonrpc.CONNECTION_CLOSED
        if refused or isinstance(leaf, IncompatibleServerError):
            return f"{'handshake refused' if step == 'handshake' else step + ' failed'}: {leaf}"
    if exited is not None:
        return f"the server exited (status {exited}) during {step}"
    first = leaves[0]
    if isinstance(first, ConnectionClosed | ConnectionError | EOFError):
        return f"the connection closed during {step}: {first}"
    return f"{step} failed: {type(first).__name__}: {first}"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc``, its causes and contexts, and the members of exception groups, depth first."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.append(current)
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return seen


async def _timed(steps: list[dict[str, Any]], name: str, work: Callable[[], Awaitable[_T]]) -> _T:
    start = time.perf_counter()
    result = await work()
    steps.append({"step": name, "ms": round((time.perf_counter() - start) * 1000.0, 3)})
    return result


async def _probe(target: _Target) -> dict[str, Any]:
    """Connect, handshake, list: the report as a dict. Raises what went wrong (``target.step`` says where)."""
    steps: list[dict[str, Any]] = []
    report: dict[str, Any] = {"transport": "http" if target.url else "stdio", "steps": steps}
    start = time.perf_counter()
    async with target.client() as client, client:
        handshake = (time.perf_counter() - start) * 1000.0
        if target.spawn_ms is not None:
            steps.append({"step": "spawn", "ms": round(target.spawn_ms, 3)})
            handshake -= target.spawn_ms
        steps.append({"step": "handshake", "ms": round(handshake, 3)})
        report.update(
            revision=client.protocol_version,
            server_info=client.server_info,
            capabilities=client.server_capabilities,
            instructions=client.instructions,
        )
        listers = {
            "tools": client.list_tools,
            "resources": client.list_resources,
            "templates": client.list_resource_templates,
            "prompts": client.list_prompts,
        }
        for kind, key, capability, method in _LISTS:
            if capability not in client.server_capabilities:
                report[kind] = None
                continue
            target.step = method
            try:
                items = await _timed(steps, target.step, listers[kind])
            except JSONRPCError:  # templates came later than resources: an older or quirky server may refuse
                if kind != "templates":  # them, which is no reason to fail a probe that passed before
                    raise
                report[kind] = None
                continue
            report[kind] = {"count": len(items), "names": [str(item.get(key)) for item in items]}
    return report


def _text(target: str, report: dict[str, Any]) -> str:
    info = report.get("server_info") or {}
    lines = [
        f"target:       {target} ({report['transport']})",
        f"server:       {info.get('name', '?')} {info.get('version', '')}".rstrip(),
        f"revision:     {report.get('revision')}",
        f"capabilities: {', '.join(sorted(report.get('capabilities') or {})) or '(none)'}",
    ]
    for kind, *_ in _LISTS:
        listed = report.get(kind)
        if listed is None:
            missing = (
                "(not supported)"
                if kind == "templates" and "resources" in (report.get("capabilities") or {})
                else "(no capability)"
            )
            lines.append(f"{kind + ':':<13} {missing}")
        else:
            lines.append(f"{kind + ':':<13} {listed['count']}  {', '.join(listed['names'])}".rstrip())
    timings = ", ".join(f"{step['step']} {step['ms']:.1f} ms" for step in report["steps"])
    lines.append(f"steps:        {timings}")
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpframe probe",
        description=(
            "Handshake with an MCP server, list its tools, resources, templates and prompts; time each step."
        ),
        epilog="mcpframe probe -- python server.py | mcpframe probe http://127.0.0.1:8000/mcp --header "
        "'Authorization: Bearer TOKEN'",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object (for scripts)")
    parser.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS", help="give up after this long (default: 30)"
    )
    parser.add_argument(
        "--header", action="append", default=[], metavar="K:V", help="an HTTP header for every request"
    )
    parser.add_argument("target", nargs=argparse.REMAINDER, help="URL, or -- command args")
    return parser


def _headers(pairs: list[str]) -> dict[str, str] | str:
    headers: dict[str, str] = {}
    for pair in pairs:
        name, colon, value = pair.partition(":")
        if not colon or not name.strip():
            return f"--header wants NAME:VALUE, got {pair!r}"
        headers[name.strip()] = value.strip()
    return headers


def _parse(argv: list[str]) -> argparse.Namespace:
    """The arguments; flags after a URL count as flags (`probe URL --header ...`, as the help shows it)."""
    parser = _parser()
    args = parser.parse_args(argv)
    first = args.target[:1]
    if first and first[0].startswith(("http://", "https://")) and len(args.target) > 1:
        url = first[0]
        args = parser.parse_args(args.target[1:], namespace=args)
        if args.target:
            parser.error(
                f"after the URL only flags, got {' '.join(args.target)!r} (a command goes after '--')"
            )
        args.target = [url]
    return args


def probe_main(argv: Sequence[str]) -> int:
    """Run ``mcpframe probe`` with ``argv`` (what follows ``probe``); return the exit status."""
    args = _parse(list(argv))
    words = args.target[1:] if args.target[:1] == ["--"] else args.target
    headers = _headers(args.header)
    if isinstance(headers, str) or not words or args.timeout <= 0:
        reason = headers if isinstance(headers, str) else "a URL or -- command args, and a positive --timeout"
        print(f"mcpframe probe: {reason}", file=sys.stderr)
        return 2
    is_url = args.target[:1] != ["--"] and len(words) == 1 and words[0].startswith(("http://", "https://"))
    target = _Target(None if is_url else words, words[0] if is_url else None, headers)

    # the library's own warnings (a rejected frame, a failed legacy-SSE fallback) would be lines of their
    # own; the failure line says it, so they are kept off stderr
    quiet = logging.getLogger("mcpframe")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False

    async def run() -> dict[str, Any]:
        with anyio.fail_after(args.timeout):
            return await _probe(target)

    try:
        report = anyio.run(run)
    except Exception as exc:  # every failure is one line, by design of the command
        line = target.explain(exc, target.step)
        if isinstance(exc, TimeoutError) and line.startswith("timeout"):
            line += f" within {args.timeout:g} s"
        print(f"mcpframe probe: {line}", file=sys.stderr)
        return 1
    shown = words[0] if is_url else " ".join(words)
    sys.stdout.write(
        json.dumps({"target": shown, **report}, indent=2) + "\n" if args.json else _text(shown, report)
    )
    return 0
