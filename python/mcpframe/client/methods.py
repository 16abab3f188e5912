"""Typed helpers for every MCP method a client calls, over any `Requester`; ``*/list`` follows ``nextCursor``.

`Methods` knows the MCP method names, their params and the shape of their results; it holds no connection
state. Whatever sends the requests (the client's `Connection`, or anything else with the same few methods)
is handed to it, so the helpers can be reused over another requester (a proxy's upstream, a test double).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, overload

from mcpframe import protocol
from mcpframe.client.tasks import TaskHandle, TaskTracker
from mcpframe.session import ProgressCallback

__all__ = ["Era", "LogLevel", "Methods", "Requester"]

LogLevel = protocol.LoggingLevel
"""A log level's name (``mcpframe.protocol.LoggingLevel``, the one list)."""
Era = Literal["modern", "legacy"]

_MAX_PAGES = 10_000


class Requester(Protocol):
    """What the typed helpers need: the negotiated era, requests, and notifications."""

    @property
    def era(self) -> Era | None:
        """``"modern"`` (2026-07-28), ``"legacy"`` (initialize handshake), ``None`` before connecting."""
        ...

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """Send a request and return its result."""
        ...

    async def interactive(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> dict[str, Any]:
        """A request whose server may answer ``input_required`` (2026-07-28): fulfilled and retried."""
        ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        ...


class Methods:
    """The MCP method helpers, sending through ``requester``."""

    def __init__(self, requester: Requester) -> None:
        self._requester = requester
        self.tasks = TaskTracker()
        """Task status notifications: set ``tasks.on_status`` to see them (client/tasks.py)."""

    @property
    def era(self) -> Era | None:
        """``"modern"`` (2026-07-28), ``"legacy"`` (initialize handshake), ``None`` before connecting."""
        return self._requester.era

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """Send any request (stamped with the modern ``_meta`` when in that era) and return its result.

        ``RequestTimeout`` after ``timeout`` (default: the client's, 60 s unless set) without a response.
        """
        return await self._requester.request(
            method, params, timeout=timeout, on_progress=on_progress, max_timeout=max_timeout
        )

    async def interactive(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> dict[str, Any]:
        """A request whose server may answer ``input_required`` (2026-07-28): fulfil and retry."""
        return await self._requester.interactive(
            method, params, timeout=timeout, on_progress=on_progress, max_timeout=max_timeout
        )

    async def list_all(self, method: str, key: str, params: dict[str, Any] | None = None) -> list[Any]:
        """Call a ``*/list`` method, following ``nextCursor`` until the last page; the items of ``key``."""
        items: list[Any] = []
        cursor: Any = None
        seen: set[str] = set()
        for _ in range(_MAX_PAGES):
            page_params = dict(params or {})
            if cursor is not None:
                page_params["cursor"] = cursor
            page = await self._requester.request(method, page_params or None)
            items.extend(page.get(key) or [])
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or cursor in seen:
                break
            seen.add(cursor)
        return items

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check the server answers (``ping``; ``server/discover`` in 2026-07-28, which has no ping)."""
        method = protocol.SERVER_DISCOVER if self.era == "modern" else protocol.PING
        await self._requester.request(method, timeout=timeout)

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server offers (all pages)."""
        return await self.list_all(protocol.TOOLS_LIST, "tools")

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
        max_timeout: float | None = None,
        task: Literal[False] = False,
        ttl: None = None,
    ) -> dict[str, Any]: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
        max_timeout: float | None = None,
        task: Literal[True],
        ttl: int | None = None,
    ) -> TaskHandle: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
        max_timeout: float | None = None,
        task: bool = False,
        ttl: int,
    ) -> TaskHandle: ...
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
        max_timeout: float | None = None,
        task: bool = False,
        ttl: int | None = None,
    ) -> dict[str, Any] | TaskHandle:
        """Call a tool; the CallToolResult (``content``, ``structuredContent``, ``isError``).

        ``on_progress(progress, total, message)`` receives the server's progress notifications.
        ``task=True`` (or ``ttl=`` milliseconds to keep it) returns a ``TaskHandle`` as soon as the server
        has made the task: ``await handle.result()`` waits for the CallToolResult (client/tasks.py). Without
        it, a 2026-07-28 server's task answer is polled to its end here and the result returned.
        """
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if (task or ttl is not None) and self.era != "modern":  # 2026-07-28: the server decides
            params["task"] = {} if ttl is None else {"ttl": ttl}
        wants_handle = task or ttl is not None
        result = await self._requester.interactive(
            protocol.TOOLS_CALL, params, timeout=timeout, on_progress=on_progress, max_timeout=max_timeout
        )
        handle = self._task_handle(result)
        if not wants_handle:  # the caller wants the result: a 2026-07-28 task is polled to its end
            return result if handle is None else await handle.result(timeout=timeout)
        if handle is None:
            return TaskHandle(self._requester, None, result=result)  # the server ran it directly
        return handle

    def _task_handle(self, result: dict[str, Any]) -> TaskHandle | None:
        """A handle if ``result`` is a task (2025-11-25: ``{"task": ...}``; 2026-07-28: ``resultType``)."""
        if result.get("resultType") == "task":
            handle = TaskHandle(self._requester, result, modern=True, fulfil=self.tasks.fulfil)
        elif isinstance(result.get("task"), dict) and "content" not in result:
            handle = TaskHandle(self._requester, result["task"])
        else:
            return None
        return self.tasks.track(handle)

    async def list_tasks(self) -> list[dict[str, Any]]:
        """Every task of this session the server still keeps (``tasks/list``, all pages)."""
        return await self.list_all(protocol.TASKS_LIST, "tasks")

    async def list_resources(self) -> list[dict[str, Any]]:
        """Every resource (all pages)."""
        return await self.list_all(protocol.RESOURCES_LIST, "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        """Every resource template (all pages)."""
        return await self.list_all(protocol.RESOURCES_TEMPLATES_LIST, "resourceTemplates")

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """The ``contents`` of a resource."""
        result = await self._requester.interactive(protocol.RESOURCES_READ, {"uri": uri}, timeout=timeout)
        contents: list[dict[str, Any]] = result.get("contents") or []
        return contents

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe`` (updates arrive as ``notifications/resources/updated``).

        Handshake era only: 2026-07-28 has no such method; there ``listen(resource_uris=[...])`` subscribes
        for as long as its block runs (a ``RuntimeError`` here says so rather than a -32601 from the server).
        """
        self._legacy_only(protocol.RESOURCES_SUBSCRIBE)
        await self._requester.request(protocol.RESOURCES_SUBSCRIBE, {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        """``resources/unsubscribe`` (handshake era only, as ``subscribe``)."""
        self._legacy_only(protocol.RESOURCES_UNSUBSCRIBE)
        await self._requester.request(protocol.RESOURCES_UNSUBSCRIBE, {"uri": uri})

    def _legacy_only(self, method: str) -> None:
        if self.era == "modern":
            raise RuntimeError(
                f"{method} is not part of 2026-07-28; use `async with client.listen(resource_uris=[...])`"
            )

    async def list_prompts(self) -> list[dict[str, Any]]:
        """Every prompt (all pages)."""
        return await self.list_all(protocol.PROMPTS_LIST, "prompts")

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """A prompt rendered with ``arguments``: ``{"description"?, "messages": [...]}``."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self._requester.interactive(protocol.PROMPTS_GET, params, timeout=timeout)

    async def complete(
        self,
        ref: dict[str, Any],
        argument: dict[str, str],
        context: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``completion/complete``: the ``completion`` object (``values``, ``total``?, ``hasMore``?).

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or ``{"type": "ref/resource", "uri": ...}``;
        ``argument`` is ``{"name": ..., "value": ...}``.
        """
        params: dict[str, Any] = {"ref": ref, "argument": argument}
        if context is not None:
            params["context"] = context
        result = await self._requester.request(protocol.COMPLETION_COMPLETE, params)
        completion: dict[str, Any] = result.get("completion") or {}
        return completion

    async def notify_roots_changed(self) -> None:
        """Tell the server the roots changed."""
        await self._requester.notify(protocol.NOTIFICATIONS_ROOTS_LIST_CHANGED)
