"""`mcpctl tools search --project P "QUERY" [--top-k N] [-o table|json]`: the search_tools ranker
from the shell, over the project's current catalogue (the cached listings, curation applied).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ._common import check_format, cli_errors, complete_projects, err, out, print_json, warn

_FORMATS = ("table", "json")


def load_project(name: str) -> Any:
    """The typed spec of project `name` (raises NotFound with did-you-mean)."""
    from mcpctl.resources.kinds import ProjectSpec
    from mcpctl.resources.store import Store

    return ProjectSpec.from_resource(Store().get("Project", name))


def presenter(spec: Any) -> Callable[[str], str]:
    """canonical id -> the name the gateway presents to agents, when the gateway says how.

    The gateway's naming module (no `mcp` import) is asked for `presented_name(canonical_id,
    spec)`; without it, canonical ids are shown.
    """
    try:
        naming = importlib.import_module("mcpctl.gateway.naming")
    except ModuleNotFoundError:
        return lambda cid: cid
    fn = getattr(naming, "presented_name", None)
    if not callable(fn):
        return lambda cid: cid

    def present(cid: str) -> str:
        try:
            return str(fn(cid, spec))
        except Exception:   # naming must never break search output
            return cid

    return present


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
        output: Annotated[str, typer.Option("-o", "--output", help="table|json")] = "table",
    ) -> None:
        """Rank the project's tools for a query, as the search_tools built-in does."""
        check_format(output, _FORMATS)
        from mcpctl.catalogue.current import project_catalogue
        from mcpctl.catalogue.rank import build_ranker
        from mcpctl.errors import MCPCtlError

        if not query.strip():
            raise MCPCtlError("QUERY is empty", hint='say what the agent wants to do, e.g. "create a github issue"')
        spec = load_project(project)
        cat = project_catalogue(spec)
        for server in cat.unlisted:
            warn(f"server {server!r} has not been listed yet; its tools are not searched "
                 f"(run `mcpctl serve --project {project}` once to list it)")
        if not cat.docs:
            raise MCPCtlError(f"project {project!r} has no tools to search",
                              hint=f"list its servers first: mcpctl serve --project {project}")
        if spec.search.ranker != "bm25" and err.is_terminal:   # a first embedding takes a while
            with err.status(f"indexing {len(cat.docs)} tools for the {spec.search.ranker} ranker…"):
                ranker = build_ranker(cat.docs, spec.search.ranker)
        else:
            ranker = build_ranker(cat.docs, spec.search.ranker)
        hits = ranker.search(query, top_k or spec.search.top_k)
        present = presenter(spec)
        if output == "json":
            print_json({
                "tools": [{
                    "name": present(cid),
                    "id": cid,
                    "description": cat.wire[cid].get("description") or "",
                    "inputSchema": cat.wire[cid].get("inputSchema") or {},
                    "score": round(score, 4),
                } for cid, score in hits],
                "total_searched": len(cat.docs),
            })
            return
        if not hits:
            err.print(f"No tool matches {query!r} (searched {len(cat.docs)} tools).")
            return
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for col in ("#", "NAME", "SCORE", "DESCRIPTION"):
            table.add_column(col, justify="right" if col in ("#", "SCORE") else "left", no_wrap=col != "DESCRIPTION")
        for i, (cid, score) in enumerate(hits, start=1):
            table.add_row(str(i), present(cid), f"{score:.2f}", _first_line(cat.wire[cid].get("description") or ""))
        out.print(table)
        err.print(f"{len(hits)} of {len(cat.docs)} tools ({getattr(ranker, 'kind', spec.search.ranker)} ranker)")
