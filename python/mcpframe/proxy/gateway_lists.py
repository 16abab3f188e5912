"""The gateway's merged lists: tools, prompts, resources and resource templates of every server, paged.

A merged list walks the servers in config order and puts their items on one page (tools and prompts
renamed `<server>__<name>`, resources and templates remembered for routing by URI) until a server answers
with a `nextCursor`: that server's page ends the gateway's, whose cursor names the server and its cursor.
So servers that do not page (most) fill one page, and clients that never follow `nextCursor` (some do
not) still see all of them; a server that pages keeps its page size. A server whose list fails is skipped
(and reported), not the whole list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from mcpframe import jsonrpc, protocol
from mcpframe.proxy.gateway_routes import UriRoutes, decode_cursor, encode_cursor, prefixed
from mcpframe.session import JSONRPCError, Request

if TYPE_CHECKING:
    from mcpframe.proxy.gateway_upstream import Upstream

__all__ = ["Lists"]

Forward = Callable[["Upstream", Request, str, dict[str, Any]], Awaitable[Any]]

_LEARN_PAGES: Final = 100
"""At most this many pages per server and list when the gateway lists resources to route an unknown URI."""


class Lists:
    """The four merged `*/list` methods, and `learn`, which lists every server's resources to route URIs."""

    def __init__(
        self,
        upstreams: Mapping[str, Upstream],
        routes: UriRoutes,
        forward: Forward,
        report: Callable[[str], None],
    ) -> None:
        self._upstreams = upstreams
        self._routes = routes
        self._forward = forward
        self._report = report

    async def tools(self, request: Request, params: dict[str, Any]) -> Any:
        """`tools/list`, merged."""
        return await self._merged(request, params, protocol.TOOLS_LIST, "tools", "tools")

    async def prompts(self, request: Request, params: dict[str, Any]) -> Any:
        """`prompts/list`, merged."""
        return await self._merged(request, params, protocol.PROMPTS_LIST, "prompts", "prompts")

    async def resources(self, request: Request, params: dict[str, Any]) -> Any:
        """`resources/list`, merged."""
        return await self._merged(request, params, protocol.RESOURCES_LIST, "resources", "resources")

    async def templates(self, request: Request, params: dict[str, Any]) -> Any:
        """`resources/templates/list`, merged."""
        method = protocol.RESOURCES_TEMPLATES_LIST
        return await self._merged(request, params, method, "resources", "resourceTemplates")

    async def _merged(
        self, request: Request, params: dict[str, Any], method: str, capability: str, key: str
    ) -> dict[str, Any]:
        order = list(self._upstreams.values())
        start, cursor = 0, None
        if params.get("cursor") is not None:
            server, cursor = decode_cursor(params["cursor"])
            names = [upstream.name for upstream in order]
            if server not in names:
                raise JSONRPCError(jsonrpc.INVALID_PARAMS, f"invalid cursor: no server named {server!r}")
            start = names.index(server)
        merged: list[Any] = []
        for upstream in order[start:]:
            if not upstream.has(capability):
                cursor = None
                continue
            page = await self._page(upstream, request, method, key, cursor)
            cursor = None
            if page is None:
                continue
            items, following = page
            merged += items
            if following is not None:  # a server that pages ends our page where its own ends
                return {key: merged, "nextCursor": encode_cursor(upstream.name, following)}
        return {key: merged}

    async def _page(
        self, upstream: Upstream, request: Request, method: str, key: str, cursor: Any
    ) -> tuple[list[Any], Any] | None:
        """One page of `upstream`'s list, adopted; None when the server failed it (reported)."""
        try:
            result = await self._forward(
                upstream, request, method, {} if cursor is None else {"cursor": cursor}
            )
        except JSONRPCError as exc:
            self._report(f"server {upstream.name!r}: {method} failed: {exc}")
            return None
        if not isinstance(result, dict):
            return None
        items = result.get(key)
        following = result.get("nextCursor")
        return self._adopt(upstream.name, key, items if isinstance(items, list) else []), following

    def _adopt(self, server: str, key: str, items: list[Any]) -> list[Any]:
        if key == "resources":
            self._routes.add_resources(server, items)
            return items
        if key == "resourceTemplates":
            self._routes.add_templates(server, items)
            return items
        return [
            {**item, "name": prefixed(server, item["name"])}
            for item in items
            if isinstance(item, dict) and isinstance(item.get("name"), str)
        ]

    async def learn(self, request: Request) -> None:
        """List every server's resources and templates (bounded), to route a URI nobody has listed yet."""
        for upstream in self._upstreams.values():
            if not upstream.has("resources"):
                continue
            for method, key in (
                (protocol.RESOURCES_LIST, "resources"),
                (protocol.RESOURCES_TEMPLATES_LIST, "resourceTemplates"),
            ):
                cursor = None
                for _ in range(_LEARN_PAGES):
                    page = await self._page(upstream, request, method, key, cursor)
                    if page is None or page[1] is None:
                        break
                    cursor = page[1]
