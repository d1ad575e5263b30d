"""`mcpctl tools search --project P "QUERY" [--top-k N] [-o table|json]`: the search_tools ranker
from the shell, over the project's current catalogue (the cached listings, curation applied).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ._common import check_format, cli_errors, complete_projects, err, out, output_option, print_json, warn

_FORMATS = ("table", "json")


def load_project(name: str) -> Any:
    """The typed spec of project `name` (raises NotFound with did-you-mean)."""
    from mcpctl.resources.kinds import ProjectSpec
    from mcpctl.resources.store import Store

    return ProjectSpec.from_resource(Store().get("Project", name))


def _first_line(text: str, width: int = 90) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def register(tools_app: typer.Typer) -> None:
    @tools_app.command("search")
    @cli_errors
    def search(
        query: Annotated[str, typer.Argument(help="What the agent wants to do, in words.")],
        project: Annotated[str, typer.Option("--project", "-p", help="Project whose catalogue to search.",
                                             autocompletion=complete_projects)],
        top_k: Annotated[int | None, typer.Option("--top-k", "-k", min=1, max=100,
                                                  help="How many tools (default: the project's search.topK).")] = None,
        output: Annotated[str, output_option(("table", "json"))] = "table",
    ) -> None:
        """Rank the project's tools for a query, as the search_tools built-in does."""
        check_format(output, _FORMATS)
        from mcpctl.catalogue.rank import ToolDoc, build_ranker
        from mcpctl.errors import MCPCtlError
        from mcpctl.gateway.catalogue import cached_catalogue

        if not query.strip():
            raise MCPCtlError("QUERY is empty", hint='say what the agent wants to do, e.g. "create a github issue"')
        cached = cached_catalogue(project)
        if cached.unlisted:         # never listed: list them now, as the gateway's first start would
            from ._listing import list_project_now

            todo = set(cached.unlisted)
            list_project_now(project, lambda n: n in todo, "listing servers never listed")
            cached = cached_catalogue(project)
        spec = cached.project
        for server, why in cached.missing.items():
            warn(f"server {server!r} cannot be served ({why}); its tools are not searched")
        view = cached.view()          # what search_tools ranks, under the names a session calls
        tools = {t.canonical_id: t for t in view.searchable}
        docs = [ToolDoc.from_wire(t.server, t.wire) for t in tools.values()]
        if not docs:
            raise MCPCtlError(f"project {project!r} has no tools to search",
                              hint=f"check its servers: mcpctl tools list --project {project} --refresh")
        if spec.search.ranker != "bm25" and err.is_terminal:   # a first embedding takes a while
            with err.status(f"indexing {len(docs)} tools for the {spec.search.ranker} ranker…"):
                ranker = build_ranker(docs, spec.search.ranker)
        else:
            ranker = build_ranker(docs, spec.search.ranker)
        hits = ranker.search(query, top_k or spec.search.top_k)

        def present(cid: str) -> str:
            return view.present(cid) or cid

        if output == "json":
            print_json({
                "tools": [{
                    "name": present(cid),
                    "id": cid,
                    "description": tools[cid].description,
                    "inputSchema": tools[cid].wire.get("inputSchema") or {},
                    "score": round(score, 4),
                } for cid, score in hits],
                "total_searched": len(docs),
            })
            return
        if not hits:
            err.print(f"No tool matches {query!r} (searched {len(docs)} tools).")
            return
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for col in ("#", "NAME", "SCORE", "DESCRIPTION"):
            table.add_column(col, justify="right" if col in ("#", "SCORE") else "left", no_wrap=col != "DESCRIPTION")
        for i, (cid, score) in enumerate(hits, start=1):
            table.add_row(str(i), present(cid), f"{score:.2f}", _first_line(tools[cid].description))
        out.print(table)
        err.print(f"{len(hits)} of {len(docs)} tools ({getattr(ranker, 'kind', spec.search.ranker)} ranker)")
