"""`search_tools` in the gateway: a ranker over what a session may see, rebuilt on change.

The ranker indexes a view's `searchable` tools (the upstream tools that pass curation and the
credential view; never mcpctl's built-ins), each with what its server said about itself (its
`about` section in the catalogue cache: title, instructions), and is rebuilt off the event loop
whenever the catalogue changes, never per query. The project's `search.ranker` picks it (`auto`:
hybrid when the embedding model loads, else BM25F); the log says once which one runs. Results
carry the name the session calls the tool by (`View.present`), so a favourite comes back under
its favourite name and, in the deferred presentation, the long tail under the name `call_tool`
takes. A search that finds nothing says so, and how to find tools anyway, in a second text block
(`builtins.no_match_text`); the structured result keeps its shape.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.catalogue.rank import Ranker
    from mcpctl.gateway.view import CatalogueTool, View

log = logging.getLogger("mcpctl.gateway")


def _docs(tools: dict[str, CatalogueTool]) -> list[Any]:
    """ToolDocs of the searchable tools, with their servers' about texts (read from the cache)."""
    from mcpctl.catalogue.cache import read_about
    from mcpctl.catalogue.rank import ToolDoc

    about = read_about({t.server for t in tools.values()})
    return [ToolDoc.from_wire(t.server, dict(t.wire), about[t.server]) for t in tools.values()]


class ToolSearch:
    """The ranker over one catalogue's searchable tools, rebuilt when they change."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._ranker: Ranker | None = None
        self._tools: dict[str, CatalogueTool] = {}
        self._built: tuple[int, str | None] | None = None
        self._said: str | None = None
        import anyio  # (not at module level: the early stdio front must not import anyio)

        self._lock = anyio.Lock()

    @property
    def ranker(self) -> Ranker | None:
        return self._ranker

    def describe(self) -> str:
        """What runs, e.g. `auto: hybrid` (or the kind asked for, before the first build)."""
        from mcpctl.catalogue.rank import describe

        return describe(self._ranker, self.kind) if self._ranker is not None else self.kind

    async def ensure(self, version: int, view: View) -> None:
        """Rebuild the index in a worker thread if the catalogue changed since the last build."""
        key = (version, view.session.profile)      # the gate does not change what is searchable
        if self._built == key:
            return
        async with self._lock:
            if self._built == key:
                return
            from mcpctl.catalogue.rank import build_ranker  # loaded on the first search

            tools = {t.canonical_id: t for t in view.searchable}
            import anyio.to_thread

            docs = await anyio.to_thread.run_sync(_docs, tools)
            ranker = await anyio.to_thread.run_sync(functools.partial(build_ranker, docs, self.kind, wait=False))
            self._ranker, self._tools, self._built = ranker, tools, key
            actual = str(getattr(ranker, "kind", self.kind))
            why = getattr(ranker, "fallback", None)
            said = f"search_tools ranks with {actual} (search.ranker: {self.kind})" + (f": {why}" if why else "")
            if said != self._said:      # once, and again only if it changes (the model installed)
                self._said = said
                log.info("%s", said)

    async def search(self, version: int, view: View, query: str, top_k: int) -> dict[str, Any]:
        """`{tools: [{name, description, inputSchema, score}], total_searched}` (a SearchPayload:
        with a `note` when nothing matched)."""
        from mcpctl.gateway.builtins import SearchPayload, no_match_text

        await self.ensure(version, view)
        ranker = self._ranker
        hits: list[tuple[str, float]] = []
        if ranker is not None:
            if getattr(ranker, "kind", "bm25") == "bm25":
                hits = ranker.search(query, top_k)          # well under a millisecond
            else:                                           # a model pass: keep the loop free
                import anyio.to_thread

                hits = await anyio.to_thread.run_sync(ranker.search, query, top_k)
        tools = []
        for cid, score in hits:
            tool, name = self._tools.get(cid), view.present(cid)
            if tool is None or name is None:
                continue
            tools.append({"name": name, "description": tool.description,
                          "inputSchema": tool.wire.get("inputSchema") or {"type": "object"},
                          "score": round(float(score), 6)})
        payload = SearchPayload(tools=tools, total_searched=len(self._tools))
        if not tools:
            payload.note = no_match_text(query, len(self._tools), list(dict.fromkeys(t.server for t in self._tools.values())),
                                         deferred=view.mode == "deferred", why=self._why_lexical())
        return payload

    def _why_lexical(self) -> str | None:
        """Why this search is keyword-only, when it is."""
        ranker = self._ranker
        if ranker is None:
            return None
        if getattr(ranker, "kind", "bm25") == "bm25":
            return getattr(ranker, "fallback", None) or f"search.ranker: {self.kind}"
        if not getattr(ranker, "ready", True):
            return "semantic search is still indexing the tools"
        return None
