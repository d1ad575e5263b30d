"""mcpctl's own tools, served next to the upstream catalogue: `search_tools`.

`search_tools(query, top_k)` ranks the project's enabled upstream tools (never the built-ins)
for an intent and returns their real schemas under the names the agent can call. The ranker
is rebuilt off the event loop whenever the catalogue changes, never per query.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import TYPE_CHECKING, Any, Final

from mcpctl.gateway.catalogue import Catalogue, ToolEntry

if TYPE_CHECKING:
    from mcpctl.catalogue.rank import Ranker

log = logging.getLogger("mcpctl.gateway")

SEARCH_TOOL: Final = "search_tools"
SEARCH_CANONICAL_ID: Final = "mcpctl/search_tools"
MAX_TOP_K: Final = 20


def search_tool_definition(default_top_k: int) -> dict[str, Any]:
    """The wire-format definition of `search_tools`."""
    return {
        "name": SEARCH_TOOL,
        "title": "Search tools",
        "description": (
            "Search this project's tool catalogue by intent. Returns the best-matching tools with "
            "their names, descriptions and input schemas, ranked; call the returned `name` directly. "
            "Use it when no tool in your list obviously fits the task."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in a few words."},
                "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": default_top_k,
                          "description": f"How many tools to return (1-{MAX_TOP_K})."},
            },
            "required": ["query"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "tools": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                                   "inputSchema": {"type": "object"}, "score": {"type": "number"}},
                    "required": ["name", "inputSchema", "score"],
                }},
                "total_searched": {"type": "integer"},
            },
            "required": ["tools", "total_searched"],
        },
        "annotations": {"title": "Search tools", "readOnlyHint": True, "destructiveHint": False,
                        "idempotentHint": True, "openWorldHint": False},
    }


class SearchError(ValueError):
    """Bad `search_tools` arguments; the message is shown to the model."""


def parse_arguments(arguments: Any, default_top_k: int) -> tuple[str, int]:
    if not isinstance(arguments, dict):
        raise SearchError("search_tools needs arguments {\"query\": string, \"top_k\": integer}")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise SearchError("search_tools: 'query' must be a non-empty string describing what you want to do")
    top_k = arguments.get("top_k", default_top_k)
    if top_k is None:
        top_k = default_top_k
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise SearchError(f"search_tools: 'top_k' must be an integer from 1 to {MAX_TOP_K} (got {top_k!r})")
    return query.strip(), top_k


class ToolSearch:
    """The ranker over the catalogue's enabled upstream tools, rebuilt on change."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._ranker: Ranker | None = None
        self._entries: dict[str, ToolEntry] = {}
        self._built_version = -1
        import anyio  # (not at module level: the early stdio front imports this module)

        self._lock = anyio.Lock()

    async def ensure(self, catalogue: Catalogue) -> None:
        """Rebuild the index in a worker thread if the catalogue changed since the last build."""
        if self._built_version == catalogue.version:
            return
        async with self._lock:
            version = catalogue.version
            if self._built_version == version:
                return
            from mcpctl.catalogue.rank import ToolDoc, build_ranker  # loaded on the first search

            entries = {e.canonical_id: e for e in catalogue.enabled_entries()}
            docs = [ToolDoc.from_wire(e.server, e.wire) for e in entries.values()]
            import anyio.to_thread

            ranker = await anyio.to_thread.run_sync(functools.partial(build_ranker, docs, self.kind, wait=False))
            self._ranker, self._entries, self._built_version = ranker, entries, version

    async def search(self, catalogue: Catalogue, query: str, top_k: int) -> dict[str, Any]:
        await self.ensure(catalogue)
        hits = self._ranker.search(query, top_k) if self._ranker is not None else []
        tools = []
        for cid, score in hits:
            entry = self._entries.get(cid)
            if entry is None:
                continue
            tools.append({"name": entry.presented, "description": entry.wire.get("description") or "",
                          "inputSchema": entry.wire.get("inputSchema") or {"type": "object"},
                          "score": round(float(score), 6)})
        return {"tools": tools, "total_searched": len(self._entries)}


def search_result(payload: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": json.dumps(payload, ensure_ascii=False)}],
            "structuredContent": payload, "isError": False}
