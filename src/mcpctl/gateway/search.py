"""`search_tools` in the gateway: a ranker over what a session may see, rebuilt on change.

The ranker indexes a view's `searchable` tools (the upstream tools that pass curation and the
credential view; never mcpctl's built-ins) and is rebuilt off the event loop whenever the
catalogue changes, never per query. Results carry the name the session calls the tool by
(`View.present`), so a favourite comes back under its favourite name and, in the deferred
presentation, the long tail under the name `call_tool` takes.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.catalogue.rank import Ranker
    from mcpctl.gateway.view import CatalogueTool, View


class ToolSearch:
    """The ranker over one catalogue's searchable tools, rebuilt when they change."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._ranker: Ranker | None = None
        self._tools: dict[str, CatalogueTool] = {}
        self._built: tuple[int, str | None] | None = None
        import anyio  # (not at module level: the early stdio front must not import anyio)

        self._lock = anyio.Lock()

    async def ensure(self, version: int, view: View) -> None:
        """Rebuild the index in a worker thread if the catalogue changed since the last build."""
        key = (version, view.session.profile)      # the gate does not change what is searchable
        if self._built == key:
            return
        async with self._lock:
            if self._built == key:
                return
            from mcpctl.catalogue.rank import ToolDoc, build_ranker  # loaded on the first search

            tools = {t.canonical_id: t for t in view.searchable}
            docs = [ToolDoc.from_wire(t.server, dict(t.wire)) for t in tools.values()]
            import anyio.to_thread

            ranker = await anyio.to_thread.run_sync(functools.partial(build_ranker, docs, self.kind, wait=False))
            self._ranker, self._tools, self._built = ranker, tools, key

    async def search(self, version: int, view: View, query: str, top_k: int) -> dict[str, Any]:
        """`{tools: [{name, description, inputSchema, score}], total_searched}`."""
        await self.ensure(version, view)
        hits = self._ranker.search(query, top_k) if self._ranker is not None else []
        tools = []
        for cid, score in hits:
            tool, name = self._tools.get(cid), view.present(cid)
            if tool is None or name is None:
                continue
            tools.append({"name": name, "description": tool.description,
                          "inputSchema": tool.wire.get("inputSchema") or {"type": "object"},
                          "score": round(float(score), 6)})
        return {"tools": tools, "total_searched": len(self._tools)}
