"""What `mcpctl tools search` prints besides the table: the learned catalogue it ranks
(`searched`), the request as the ranker read it (`--explain`), and the JSON of hits and
explanations (keys pinned by tests). No rich, no typer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.audit.records import AuditLog
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.catalogue.rank import ToolDoc
    from mcpctl.catalogue.tool import CatalogueTool
    from mcpctl.presentation.catalogue import CachedCatalogue
    from mcpctl.presentation.view import View


@dataclass(frozen=True)
class Searched:
    """What `tools search` ranks: the project's view (the names a session calls), its searchable
    tools by canonical id, their documents (with what the log teaches, where the project learns)
    and what was learned."""

    view: View
    tools: dict[str, CatalogueTool]
    docs: list[ToolDoc]
    learned: Any

    def present(self, cid: str) -> str:
        return self.view.present(cid) or cid


def searched(project: str, cached: CachedCatalogue, cache: CatalogueCache, log: Callable[[], AuditLog]) -> Searched:
    """What `search_tools` of `project` ranks, from its cached catalogue; `log()` (what the project
    learns from) is opened only when there is something to rank. MCPCtlError when nothing is."""
    from mcpctl.errors import MCPCtlError
    from mcpctl.presentation.search import tool_docs

    view = cached.view()          # what search_tools ranks, under the names a session calls
    tools = {t.canonical_id: t for t in view.searchable}
    docs = tool_docs(tools, cache)
    if not docs:
        raise MCPCtlError(f"project {project!r} has no tools to search",
                          hint=f"check its servers: mcpctl tools list --project {project} --refresh")
    docs, learned = learned_docs(project, cached.project, docs, log())
    return Searched(view, tools, docs, learned)


def learned_docs(project: str, spec: Any, docs: list[ToolDoc], log: AuditLog) -> tuple[list[ToolDoc], Any]:
    """`docs` with what the project's log teaches (where it learns, `search.learn`), and what was learned."""
    from mcpctl.catalogue.learn import NOTHING

    if not spec.search.learns:
        return docs, NOTHING
    from mcpctl.presentation.search import read_learned

    learned = read_learned(log.search_evidence, project, spec.search.learn, {d.id for d in docs})
    return learned.apply(docs), learned


def explain_header(query: str, learned: Any) -> str:
    """The request as the ranker read it: its action, the values it carries, what was learned."""
    from mcpctl.catalogue.intent import understand

    intent = understand(query)
    action = f"{intent.action.effect} ({intent.action.words!r})" if intent.action else "none (ranked as before)"
    parts = [f"request: action {action}"]
    said = {"path": "a file", "url": "a URL", "email": "an email address", "time": "a clock time",
            "specific": "a particular thing", "everything": "everything"}
    if intent.values:
        parts.append("about " + ", ".join(said.get(v, v) for v in sorted(intent.values)))
    if intent.text != query:
        parts.append(f"ranked as {intent.text!r}")
    if learned:
        parts.append(f"learned: {len(learned.uses)} tool(s) from {learned.pairs} recorded search(es)")
    return "; ".join(parts)


def explained_json(rows: Sequence[Any], query: str, present: Callable[[str], str], learned: Any,
                   total: int) -> dict[str, Any]:
    """`tools search --explain -o json`: each hit's score and where it came from."""
    return {"request": explain_header(query, learned), "tools": [{
        "name": present(e.id), "id": e.id, "score": round(e.score, 4), "effect": e.effect,
        "factor": round(e.factor, 4), "bm25f": round(e.lexical, 4),
        "semantic": None if e.semantic is None else round(e.semantic, 4),
        "learned": round(e.learned, 4), "belowBestReader": e.capped} for e in rows], "total_searched": total}


def hits_json(hits: Sequence[tuple[str, float]], tools: dict[str, CatalogueTool], present: Callable[[str], str],
              total: int) -> dict[str, Any]:
    """`tools search -o json`: the hits as search_tools returns them, and how many tools were searched."""
    return {
        "tools": [{
            "name": present(cid),
            "id": cid,
            "description": tools[cid].description,
            "inputSchema": tools[cid].wire.get("inputSchema") or {},
            "score": round(score, 4),
        } for cid, score in hits],
        "total_searched": total,
    }
