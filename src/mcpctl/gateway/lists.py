"""The four lists a session reads (tools, prompts, resources, templates), page by page.

Each waits for first contact (`Pool.first_contact`), takes the session's view and pages it
(`presentation.paging`; a bad cursor is the protocol's -32602). The first page of `tools/list`
is serialized once per catalogue version, era and session key (`tools_list_json`, the stdio
hot path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import MCPError
from mcp.types.jsonrpc import INVALID_PARAMS

from mcpctl.presentation import paging
from mcpctl.presentation.catalogue import tools_list_json
from mcpctl.presentation.view import SessionKey

if TYPE_CHECKING:
    from mcpctl.gateway.pool import Pool
    from mcpctl.gateway.sessions import Caller
    from mcpctl.gateway.surfaces import Surfaces
    from mcpctl.gateway.views import Views


class Lists:
    """A gateway's list results (`page_size`: items per page; 0: one page)."""

    def __init__(self, views: Views, pool: Pool, surfaces: Surfaces, page_size: int = 0) -> None:
        self.views = views
        self.pool = pool
        self.surfaces = surfaces
        self.page_size = page_size
        self.stamp: dict[str, Any] = {}         # the 2026-07-28 serverInfo stamp, once the server exists
        self._json: dict[tuple[int, bool, SessionKey], str] = {}

    async def tools(self, caller: Caller) -> list[dict[str, Any]]:
        await self.pool.first_contact()
        return self.views.view_for(caller).tools

    async def tools_page(self, caller: Caller, params: Any) -> dict[str, Any]:
        return self.listed("tools", await self.tools(caller), params)

    async def surface_page(self, caller: Caller, section: str, params: Any) -> dict[str, Any]:
        """One page of the session's `prompts`, `resources` or `resourceTemplates`."""
        await self.pool.first_contact()
        return self.listed(section, self.surfaces.lists(caller, section), params)

    async def tools_json(self, modern: bool, caller: Caller, cursor: Any = None) -> str:
        """The session's `tools/list` result (the page `cursor` asks for) as JSON text, with its
        era's envelope. A bad cursor raises MCPError -32602."""
        tools = await self.tools(caller)
        if cursor is not None:
            items, after = self._page(tools, "tools", cursor)
            return tools_list_json(items, modern, self.stamp, after)
        version = self.views.catalogue.version
        key = (version, modern, self.views.key(caller))
        cached = self._json.get(key)
        if cached is None:
            items, after = self._page(tools, "tools", None)
            cached = tools_list_json(items, modern, self.stamp, after)
            self._json = {key: cached, **{k: v for k, v in self._json.items() if k[0] == version}}
        return cached

    def listed(self, section: str, items: list[dict[str, Any]], params: Any) -> dict[str, Any]:
        """One page of a list result (`params`: the request's params, a model or a dict)."""
        cursor = params.get("cursor") if isinstance(params, dict) else getattr(params, "cursor", None)
        if cursor is None and self.page_size <= 0:
            return {section: items}
        page, after = self._page(items, section, cursor)
        result: dict[str, Any] = {section: list(page)}
        if after is not None:
            result["nextCursor"] = after
        return result

    def _page(self, items: list[dict[str, Any]], section: str, cursor: Any) -> tuple[Any, str | None]:
        try:
            return paging.page(items, section, cursor, self.page_size, self.views.catalogue.version)
        except paging.CursorError as e:
            raise MCPError(code=INVALID_PARAMS, message=str(e)) from None
