"""`mcpctl eval`: score a ranker on tool-retrieval datasets, or on the project's own traffic.

    mcpctl eval --dataset DIR [--dataset DIR ...] [--ranker auto|bm25|semantic|hybrid ...]
                [--split test|dev|all] [-o table|json]
    mcpctl eval --from-log --project P [--ranker ...] [-o table|json]

The RANKER column says what ran: `hybrid`, or `auto->hybrid` / `auto->bm25` (and
`semantic->bm25`) when the requested kind resolved to another; why a fallback happened is
printed on stderr.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import check_format, cli_errors, complete_projects, err, out, output_option, print_json, warn

if TYPE_CHECKING:
    from mcpctl.catalogue.rank import ToolDoc
    from mcpctl.evaluation.datasets import Query
    from mcpctl.evaluation.evaluate import Result

_FORMATS = ("table", "json")
_PROGRESS_MIN_QUERIES = 500   # below this a run takes well under a second


def _run(name: str, docs: Sequence[ToolDoc], queries: Sequence[Query], kinds: Sequence[str],
         portion: str) -> list[Result]:
    from mcpctl.catalogue.rank import build_ranker, describe
    from mcpctl.catalogue.rank import label as ranker_label
    from mcpctl.evaluation.evaluate import Result, evaluate

    results: list[Result] = []
    for kind in kinds:
        if kind != "bm25" and err.is_terminal:   # embedding a new catalogue takes a while
            with err.status(f"{name}: indexing {len(docs)} tools for {kind}…"):
                ranker = build_ranker(docs, kind)
        else:
            ranker = build_ranker(docs, kind)
        label = ranker_label(ranker, kind)
        if getattr(ranker, "fallback", None):
            _note_once(f"ranker {describe(ranker, kind)}")
        with _progress(f"{name} ({label})", len(queries)) as advance:
            metrics = evaluate(ranker, queries, progress=advance)
        results.append(Result(name, label, portion, len(queries), len(docs), metrics))
    return results


_noted: set[str] = set()


def _note_once(message: str) -> None:
    if message not in _noted:
        _noted.add(message)
        warn(message)


class _progress:
    """A rich progress bar on stderr for long runs on a terminal; a no-op otherwise."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.bar: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if self.total < _PROGRESS_MIN_QUERIES or not err.is_terminal:
            return lambda n: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeRemainingColumn(), console=err, transient=True)
        self.bar.start()
        task = self.bar.add_task(self.label, total=self.total)
        return lambda n: self.bar.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _from_log(project: str, kinds: Sequence[str] | None) -> list[Result]:
    from mcpctl.catalogue.rank import ToolDoc
    from mcpctl.errors import MCPCtlError
    from mcpctl.evaluation.datasets import Query
    from mcpctl.presentation.catalogue import cached_catalogue

    from .logs import open_log
    from .tools_search import load_project

    spec = load_project(project)
    with open_log() as log:             # the team database's log when a database URL is set
        pairs = log.search_pairs(project)
    if not pairs:
        use = (f"let an agent use search_tools through `mcpctl serve --project {project}`; "
               "each search followed by a tool call becomes one pair")
        if spec.search.record_queries:
            raise MCPCtlError(f"no recorded searches for project {project!r} yet (query recording is on)",
                              hint=use)
        raise MCPCtlError(
            f"no recorded searches for project {project!r}: query recording is off",
            hint=("turn it on with `search: {recordQueries: true}` in the project's spec "
                  f"(mcpctl edit project {project}), then " + use),
        )
    cached = cached_catalogue(project)
    for server in cached.unlisted:
        warn(f"server {server!r} has not been listed yet; its tools are not in the catalogue")
    from mcpctl.catalogue.cache import read_about

    searchable = cached.view().searchable
    about = read_about({t.server for t in searchable})
    docs = [ToolDoc.from_wire(t.server, t.wire, about[t.server]) for t in searchable]   # what search_tools ranks
    known = {d.id for d in docs}
    queries = [Query(f"log-{i}", q, (frozenset([tool]),)) for i, (q, tool) in enumerate(pairs) if tool in known]
    gone = len(pairs) - len(queries)
    if gone:
        warn(f"{gone} of {len(pairs)} recorded pairs name a tool no longer in the catalogue; left out")
    if not queries:
        raise MCPCtlError(f"none of the {len(pairs)} recorded pairs of project {project!r} "
                          "names a tool in its current catalogue")
    return _run(f"log:{project}", docs, queries, kinds or [spec.search.ranker], "log")


def _render(results: Sequence[Result], output: str) -> None:
    if output == "json":
        print_json([r.as_dict() for r in results])
        return
    from rich.table import Table

    from mcpctl.evaluation.metrics import METRIC_NAMES

    table = Table(box=None, pad_edge=False)
    for col in ("DATASET", "RANKER", "SPLIT", "QUERIES", "TOOLS", *METRIC_NAMES):
        table.add_column(col, justify="left" if col in ("DATASET", "RANKER", "SPLIT") else "right", no_wrap=True)
    for r in results:
        table.add_row(r.dataset, r.ranker, r.portion, str(r.queries), str(r.tools),
                      *(f"{r.metrics[m]:.3f}" for m in METRIC_NAMES))
    out.print(table)


def register(app: typer.Typer) -> None:
    @app.command("eval", rich_help_panel="Catalogue")
    @cli_errors
    def eval_cmd(
        dataset: Annotated[list[Path] | None, typer.Option(
            "--dataset", "-d", help="A folder with tools.jsonl and queries.jsonl, or resources and questions "
            "for ask (repeatable).",
            file_okay=False)] = None,
        ranker: Annotated[list[str] | None, typer.Option(
            "--ranker", "-r", help="auto|bm25|semantic|hybrid (repeatable; default auto: hybrid when the "
            "embedding model loads, else bm25; with --from-log, the project's search.ranker).")] = None,
        split: Annotated[str, typer.Option(
            "--split", help="test|dev|all: which queries of each dataset (test: MetaTool fold 4, "
            "ToolLens split test, all of a dataset without a split).")] = "test",
        from_log: Annotated[bool, typer.Option(
            "--from-log", help="Score on (query -> tool called next) pairs recorded by the gateway.")] = False,
        project: Annotated[str | None, typer.Option(
            "--project", "-p", help="Project for --from-log.", autocompletion=complete_projects)] = None,
        output: Annotated[str, output_option(("table", "json"))] = "table",
    ) -> None:
        """Score a search ranker: R@1, R@5, R@10, MRR@10, nDCG@10 and C@10 per dataset."""
        check_format(output, _FORMATS)
        from mcpctl.catalogue.rank import DEFAULT_KIND, RANKER_KINDS
        from mcpctl.errors import MCPCtlError
        from mcpctl.evaluation.datasets import PORTIONS, load_dataset

        for kind in ranker or ():
            if kind not in RANKER_KINDS:
                raise typer.BadParameter(f"{kind!r} is not one of: {', '.join(RANKER_KINDS)}",
                                         param_hint="'--ranker'")
        if split not in PORTIONS:
            raise typer.BadParameter(f"{split!r} is not one of: {', '.join(PORTIONS)}", param_hint="'--split'")
        if from_log:
            if not project:
                raise typer.BadParameter("--from-log needs --project P", param_hint="'--project'")
            if dataset:
                raise typer.BadParameter("give either --dataset or --from-log, not both", param_hint="'--dataset'")
            _render(_from_log(project, ranker), output)
            return
        if not dataset:
            raise MCPCtlError("nothing to evaluate",
                              hint="give --dataset DIR (a folder with tools.jsonl and queries.jsonl) "
                                   "or --from-log --project P")
        results: list[Result] = []
        for folder in dataset:
            from mcpctl.evaluation.ask import evaluate_ask, is_ask_dataset, load_ask_dataset

            if is_ask_dataset(folder):       # questions over resources: ask's retrieval (docs/ask.md)
                asked = load_ask_dataset(folder)
                results.extend(evaluate_ask(asked, kind) for kind in ranker or [DEFAULT_KIND])
                continue
            ds = load_dataset(folder)
            queries = ds.select(split)
            if not queries:
                warn(f"dataset {ds.name!r} has no {split} queries; skipped")
                continue
            results.extend(_run(ds.name, ds.tools, queries, ranker or [DEFAULT_KIND], split))
        if not results:
            raise MCPCtlError(f"no {split} queries in the given datasets")
        _render(results, output)
