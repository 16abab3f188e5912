"""`Server`: register tools, resources, prompts and completers with decorators, then serve connections."""

from __future__ import annotations

import inspect
import logging
import os
import secrets
import sys
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Literal, TypeVar, overload

import anyio

from mcpframe import protocol
from mcpframe._gc import freeze_startup_heap
from mcpframe.session import Request, Session, SessionOptions, SuspendRule
from mcpframe.transports.base import Transport
from mcpframe.transports.stdio import stdio_server

from .builders import make_prompt, make_resource, make_tool
from .connection import ServerConnection
from .eras import RequestState
from .handlers import HANDLERS, Handler
from .lifecycle import LifespanError, current_stop, run_stoppable, startup_failure, tracked
from .registry import ListKind, Registry, Resource
from .tasks import TASK_CAPABILITY, TaskManager, TaskSupport
from .tasks_methods import TASK_HANDLERS

__all__ = ["Lifespan", "Server"]

F = TypeVar("F", bound=Callable[..., Any])

Lifespan = Callable[["Server"], AbstractAsyncContextManager[Any]]
"""``lifespan(server)``: an async context manager (``@asynccontextmanager``) whose yielded value handlers
read as ``ctx.lifespan_context``."""


def _completer(fn: Callable[..., Any]) -> Callable[[str, dict[str, str]], Any]:
    """Accept completers taking `(value)` or `(value, context_arguments)`."""
    arity = len(inspect.signature(fn).parameters)
    if arity == 1:
        return lambda value, _context: fn(value)
    if arity == 2:
        return fn
    raise TypeError(f"{fn.__qualname__}: a completer takes (value) or (value, context_arguments)")


class Server:
    """An MCP server: what it offers, and how to serve it on a transport.

    >>> server = Server("demo", version="1.0.0")
    >>> @server.tool
    ... def add(a: int, b: int) -> int:
    ...     "Add two numbers."
    ...     return a + b
    """

    suspends: Callable[[Request], bool] | None
    """Whether a request's handler surely suspends in its first step: a `tools/call` of a `def` tool,
    with or without a `Context` (either way its call goes to a worker thread), that does not run as a
    task. Each connection gives it to its Session (`Session.suspends`), which then starts such a call
    in a task of its own rather than eagerly; a wrong guess costs time, never an answer. A `SuspendRule`
    on the registry's `threaded_tools`, so the Session checks it without a call; a subclass may define
    its own `suspends` method (or attribute) instead, which `__init__` then leaves in place."""

    def __init__(
        self,
        name: str,
        *,
        version: str = "0.0.0",
        instructions: str | None = None,
        title: str | None = None,
        page_size: int | None = 100,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
        logger: logging.Logger | None = None,
        lifespan: Lifespan | None = None,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1 (or None for unpaginated lists)")
        self.name = name
        self.version = version
        self.instructions = instructions
        self.page_size = page_size
        # 2026-07-28 caching hints on lists, reads and discover; 0 = always re-fetch (lists can change).
        self.cache_ttl_ms = max(0, cache_ttl_ms)
        self.cache_scope = cache_scope
        self.logger = logger or logging.getLogger("mcpframe.server")
        self.info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.info["title"] = title
        self.registry = Registry()
        # The method table a connection dispatches to; an adapter may replace or add entries. A handler
        # that replaces a built-in one owns its method entirely (2026-07-28 requestState included).
        self.handlers: dict[str, Handler] = {**HANDLERS, **TASK_HANDLERS}
        self.tasks = TaskManager()
        """The server's tasks (server/tasks.py): replace it before serving to pick the store or ttl bounds."""
        # Called for a method the table lacks (after initialize), instead of answering -32601 here.
        self.fallback_handler: Handler | None = None
        self.registry.listen(self._changed)
        if not hasattr(type(self), "suspends"):  # a subclass's own `suspends` (a method) is kept
            self.suspends = SuspendRule(protocol.TOOLS_CALL, "name", self.registry.threaded_tools)
        self.request_state = RequestState(secrets.token_bytes(32))
        self._connections: set[ServerConnection] = set()
        self._capabilities: dict[str, Any] | None = None
        self._lifespan = lifespan
        self._lifespan_depth = 0
        self._lifespan_stack: AsyncExitStack | None = None
        self.lifespan_state: Any = None
        """What the lifespan yielded, while it runs (``ctx.lifespan_context`` in a handler)."""

    # ------------------------------------------------------------ registration

    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | bool | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        task_support: TaskSupport = "forbidden",
    ) -> Callable[[F], F]: ...
    def tool(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | bool | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        task_support: TaskSupport = "forbidden",
    ) -> F | Callable[[F], F]:
        """Register a tool (`@server.tool` or `@server.tool(name=..., ...)`).

        The input schema comes from the type hints (`Annotated[T, "description"]` or `msgspec.Meta`
        describe a parameter) unless `input_schema` gives it verbatim; the description is the docstring.
        A return annotation that is an object type (Struct, dataclass, TypedDict, dict) publishes an
        `outputSchema` and `structuredContent`; `output_schema=True` forces it (non-objects are wrapped as
        `{"result": ...}`), `False` turns it off, a dict gives it verbatim.
        `task_support="optional"` lets a client run it as a task (`params.task`, 2025-11-25), `"required"`
        makes that the only way (docs/tasks.md); the server then declares the `tasks` capability.
        """
        if task_support not in ("forbidden", "optional", "required"):
            raise ValueError(
                f"task_support must be 'forbidden', 'optional' or 'required', not {task_support!r}"
            )

        def register(func: F) -> F:
            tool = make_tool(
                func,
                name=name,
                title=title,
                description=description,
                input_schema=input_schema,
                output_schema=output_schema,
                annotations=annotations,
                icons=icons,
                meta=meta,
            )
            if task_support != "forbidden":
                tool.task_support = task_support
                tool.wire["execution"] = {"taskSupport": task_support}
            self.registry.add_tool(tool)
            return func

        return register(fn) if fn is not None else register

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        size: int | None = None,
    ) -> Callable[[F], F]:
        """Register a resource (`@server.resource("test://x")`) or a template (`"file:///{+path}"`).

        The function returns `str` (text), `bytes` (blob), contents dicts, or any JSON-encodable value.
        A template's function takes the URI's variables as parameters (`{name}` is one path segment,
        `{+name}` may contain slashes).
        """
        if not isinstance(uri, str):  # `@server.resource` with no URI: the function came as the URI
            raise TypeError(
                'server.resource needs a URI: write @server.resource("scheme://name"), not a bare '
                f"@server.resource (got {uri!r})"
            )

        def register(func: F) -> F:
            entry = make_resource(
                func,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                annotations=annotations,
                icons=icons,
                size=size,
            )
            if isinstance(entry, Resource):
                self.registry.add_resource(entry)
            else:
                self.registry.add_template(entry)
            return func

        return register

    @overload
    def prompt(self, fn: F, /) -> F: ...
    @overload
    def prompt(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[dict[str, Any]] | None = None,
    ) -> Callable[[F], F]: ...
    def prompt(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[dict[str, Any]] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a prompt (`@server.prompt` or `@server.prompt(name=...)`); parameters are its arguments.

        The function returns a string (one user message), messages (`user()`, `assistant()`), content
        blocks, or a list of them.
        """

        def register(func: F) -> F:
            prompt = make_prompt(func, name=name, title=title, description=description, icons=icons)
            self.registry.add_prompt(prompt)
            return func

        return register(fn) if fn is not None else register

    def completion(
        self, *, argument: str, prompt: str | None = None, template: str | None = None
    ) -> Callable[[F], F]:
        """Register a completer for one argument of a prompt, or one variable of a resource template.

        The completer takes `(value)` or `(value, context_arguments)` and returns the candidate strings
        (sync or async); the first 100 are sent, with `total` and `hasMore`.
        """
        if (prompt is None) == (template is None):
            raise TypeError("completion() needs exactly one of prompt= and template=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", template)

        def register(func: F) -> F:
            self.registry.completers[(key[0], str(key[1]), argument)] = _completer(func)
            self._capabilities = None
            return func

        return register

    def remove_tool(self, name: str) -> bool:
        """Unregister a tool; connected clients get `notifications/tools/list_changed`."""
        return self.registry.remove("tools", name)

    def remove_prompt(self, name: str) -> bool:
        """Unregister a prompt."""
        return self.registry.remove("prompts", name)

    def remove_resource(self, uri: str) -> bool:
        """Unregister a resource or template (by URI or URI template)."""
        return self.registry.remove("resources", uri)

    # ---------------------------------------------------------- notifications

    def capabilities(self) -> dict[str, Any]:
        """The server capabilities, from what is registered right now (treat the dict as read-only)."""
        if self._capabilities is None:
            self._capabilities = self._compute_capabilities()
        return self._capabilities

    def modern_capabilities(self) -> dict[str, Any]:
        """The capabilities `server/discover` declares to 2026-07-28 clients: the same, except that tasks
        are the `io.modelcontextprotocol/tasks` extension there (`extensions`), not a `tasks` capability."""
        caps = self.capabilities()
        if "tasks" not in caps:
            return caps
        modern = {key: value for key, value in caps.items() if key != "tasks"}
        modern["extensions"] = {**caps.get("extensions", {}), protocol.TASKS_EXTENSION: {}}
        return modern

    def _compute_capabilities(self) -> dict[str, Any]:
        registry = self.registry
        caps: dict[str, Any] = {"logging": {}}
        if registry.completers:
            caps["completions"] = {}
        if registry.prompts:
            caps["prompts"] = {"listChanged": True}
        if registry.resources or registry.templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if registry.tools:
            caps["tools"] = {"listChanged": True}
        if any(tool.task_support != "forbidden" for tool in list(registry.tools.values())):
            caps["tasks"] = TASK_CAPABILITY
        return caps

    def _changed(self, kind: ListKind) -> None:
        self._capabilities = None
        for connection in list(self._connections):
            connection.post("list", kind)

    def notify_list_changed(self, kind: ListKind) -> None:
        """Tell connected clients that the `kind` list changed (registration does this by itself)."""
        self._changed(kind)

    def notify_resource_updated(self, uri: str) -> None:
        """Send `notifications/resources/updated` to every client subscribed to `uri` (any thread)."""
        for connection in list(self._connections):
            connection.post("updated", uri)

    def close_connections(self) -> None:
        """Shutting down: open `subscriptions/listen` requests answer; change notifications stop."""
        for connection in list(self._connections):
            connection.close()

    # ---------------------------------------------------------------- serving

    def connection(self) -> ServerConnection:
        """Fresh per-connection state; give its handlers to a Session (see docs/session-api.md).

        Under an entry point that stops gracefully (`lifecycle.run_stoppable`) its requests are tracked, so
        a stop can wait for them (the HTTP host makes its connections here too).
        """
        return tracked(ServerConnection(self))

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[Any]:
        """Run the ``lifespan=`` given to the server (entered once however many connections share it).

        The first entry starts it and keeps what it yields in ``lifespan_state``; the last exit runs its
        teardown (shielded from cancellation, so a stop still tears down). ``serve()`` enters it, so it
        also runs for ``Client(server)`` in memory. A failure while starting is a ``LifespanError``.
        """
        if self._lifespan_depth == 0 and self._lifespan is not None:
            stack = AsyncExitStack()
            try:
                self.lifespan_state = await stack.enter_async_context(self._lifespan(self))
            except Exception as exc:
                raise startup_failure(self.name, exc) from exc
            self._lifespan_stack = stack
        self._lifespan_depth += 1
        try:
            yield self.lifespan_state
        finally:
            self._lifespan_depth -= 1
            if self._lifespan_depth == 0 and self._lifespan_stack is not None:
                stack, self._lifespan_stack = self._lifespan_stack, None
                self.lifespan_state = None
                with anyio.CancelScope(shield=True):
                    await stack.aclose()

    async def serve(self, transport: Transport, *, session_options: SessionOptions | None = None) -> None:
        """Serve one connection on `transport` until the peer goes away, inside the server's lifespan.

        `session_options` tune the connection's Session (`None`: its defaults). JSON-RPC batches follow
        `eras.batches_allowed`: refused (one -32600 error) until `initialize` has negotiated 2025-03-26,
        the one revision that has them. Under `run()` (or another entry point that handles SIGTERM and
        SIGINT) the connection stops gracefully on a signal (`server/lifecycle.py`).
        """
        connection = tracked(self.connection())  # a subclass's connection() may not have
        stop = current_stop()
        session = Session(
            transport,
            request_handler=connection.handle_request,
            notification_handler=connection.handle_notification,
            options=session_options,
            batches=False,
        )
        async with self.lifespan():
            if stop is None:
                await connection.run(session)
                return
            stop.claimed = True
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop.drain, session, connection.close)  # listens end, notifications stop
                await connection.run(session)
                tg.cancel_scope.cancel()

    async def serve_stdio(self, *, session_options: SessionOptions | None = None) -> None:
        """Serve on this process's stdin/stdout (stdout protected from stray prints)."""
        async with stdio_server() as transport:
            await self.serve(transport, session_options=session_options)

    def run(
        self, *, session_options: SessionOptions | None = None, grace: float | None = None, hint: bool = True
    ) -> None:
        """Serve on stdio until stdin closes or SIGTERM/SIGINT stops it (blocking).

        Typed at a shell prompt (stdin a terminal, which an MCP client never gives it), it first says on
        stderr, in one line, what it waits for; ``hint=False`` keeps that line back.

        On a signal, requests in flight get `grace` seconds (default 10, or `MCPFRAME_SHUTDOWN_GRACE`) to
        answer, those still running are answered with an error, the lifespan's teardown runs, and this
        returns; a second signal exits at once (status 130 for SIGINT, 143 for SIGTERM). A lifespan that
        fails at start-up is one line on stderr and exit status 1 (`MCPFRAME_DEBUG=1` adds the traceback).

        This owns the process, so once the lifespan has started the start-up heap is frozen out of the
        cyclic GC (``MCPFRAME_GC_FREEZE=0`` turns that off; see ``mcpframe._gc``).
        """
        if hint and sys.stdin is not None and sys.stdin.isatty():
            print(
                f"mcpframe: server {self.name!r} speaks MCP on stdin/stdout, for an MCP client that starts "
                "this program (docs/running.md); nothing to type here. Ctrl-C stops it.",
                file=sys.stderr,
                flush=True,
            )
        try:
            anyio.run(self._run_stdio, session_options, grace)
        except LifespanError as exc:
            if os.environ.get("MCPFRAME_DEBUG", "") not in ("", "0") and exc.__cause__ is not None:
                traceback.print_exception(exc.__cause__, file=sys.stderr)
            print(f"mcpframe: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None

    async def _run_stdio(self, session_options: SessionOptions | None, grace: float | None) -> None:
        async def main() -> None:
            async with self.lifespan():
                freeze_startup_heap()  # in the loop, so the loop's and the lifespan's objects are frozen too
                await self.serve_stdio(session_options=session_options)

        await run_stoppable(main, grace=grace)
