"""`mcpctl eval`: score a ranker on tool-retrieval datasets, or on the project's own traffic.

    mcpctl eval --dataset DIR [--dataset DIR ...] [--ranker auto|bm25|semantic|hybrid ...]
                [--split test|dev|all] [--learn N [--attach next|gold]] [-o table|json]
    mcpctl eval --from-log --project P [--ranker ...] [--split all|time] [-o table|json]

`--learn N`: before scoring the test portion, the ranker learns at most N queries per tool from the
dataset's dev portion, each as if a session had searched for it and then called its tool
(`evaluation.learning`). `--from-log --split time`: learn from the older two thirds of the
project's recorded searches (under its `search.learn`), score the newest third, with and without
what was learned.

The RANKER column says what ran: `hybrid`, or `auto->hybrid` / `auto->bm25` (and
`semantic->bm25`) when the requested kind resolved to another; why a fallback happened is
printed on stderr.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import (
    check_format,
    cli_errors,
    complete_projects,
    err,
    out,
    output_option,
    print_json,
    the_store,
    warn,
)

if TYPE_CHECKING:
    from mcpctl.catalogue.rank import ToolDoc
    from mcpctl.evaluation.datasets import Query
    from mcpctl.evaluation.evaluate import Result

_FORMATS = ("table", "json")
_PROGRESS_MIN_QUERIES = 500   # below this a run takes well under a second


def _run(name: str, docs: Sequence[ToolDoc], queries: Sequence[Query], kinds: Sequence[str],
         portion: str, learned: str | None = None) -> list[Result]:
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
        results.append(Result(name, label, portion, len(queries), len(docs), metrics, learned))
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


def _from_log(project: str, kinds: Sequence[str] | None, split: str = "all") -> list[Result]:
    from mcpctl.catalogue.rank import ToolDoc
    from mcpctl.errors import MCPCtlError
    from mcpctl.evaluation.datasets import Query
    from mcpctl.presentation.catalogue import cached_catalogue

    from ._common import invocation_log, the_cache
    from .tools_search import load_project

    spec = load_project(project)
    with invocation_log() as log:             # the team database's log when a database URL is set
        evidence = [e for e in log.search_evidence(project) if e.ok]
    pairs = [(e.query, e.tool) for e in evidence]
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
    cached = cached_catalogue(project, the_store(), the_cache())
    for server in cached.unlisted:
        warn(f"server {server!r} has not been listed yet; its tools are not in the catalogue")
    searchable = cached.view().searchable
    about = the_cache().read_about({t.server for t in searchable})
    docs = [ToolDoc.from_wire(t.server, t.wire, about[t.server], t.canonical_id) for t in searchable]   # what search_tools ranks
    known = {d.id for d in docs}
    evidence = [e for e in evidence if e.tool in known]
    gone = len(pairs) - len(evidence)
    if gone:
        warn(f"{gone} of {len(pairs)} recorded pairs name a tool no longer in the catalogue; left out")
    if not evidence:
        raise MCPCtlError(f"none of the {len(pairs)} recorded pairs of project {project!r} "
                          "names a tool in its current catalogue")
    kinds = kinds or [spec.search.ranker]
    if split != "time":
        queries = [Query(f"log-{i}", e.query, (frozenset([e.tool]),)) for i, e in enumerate(evidence)]
        return _run(f"log:{project}", docs, queries, kinds, "log")
    return _time_split(project, spec, docs, evidence, kinds)


def _time_split(project: str, spec: Any, docs: list[ToolDoc], evidence: list[Any], kinds: Sequence[str]) -> list[Result]:
    """Learn from the older pairs (as the gateway would, under the project's search.learn), score
    the newer ones with and without what was learned."""
    from mcpctl.catalogue.learn import learn
    from mcpctl.errors import MCPCtlError
    from mcpctl.evaluation.datasets import Query
    from mcpctl.evaluation.learning import time_split

    older, newer, split_at = time_split(evidence)
    if not older:
        raise MCPCtlError(f"project {project!r} has {len(evidence)} recorded pair(s): too few to split by time",
                          hint="--split time learns from the older two thirds and scores the newest third")
    settings = spec.search.learn
    learned = learn(older, min_sessions=settings.min_sessions, window_days=settings.window_days, now=split_at,
                    known={d.id for d in docs})
    if not learned:
        warn(f"nothing learned from the {len(older)} older pair(s): no tool was called after a search in "
             f"{settings.min_sessions} distinct sessions (search.learn.minSessions)")
    queries = [Query(f"log-{i}", e.query, (frozenset([e.tool]),)) for i, e in enumerate(newer)]
    said = f"{len(older)} older pairs ({sum(learned.uses.values())} uses of {len(learned.uses)} tools)"
    return (_run(f"log:{project}", docs, queries, kinds, "time", "nothing")
            + _run(f"log:{project}", learned.apply(docs), queries, kinds, "time", said))


def _dataset_results(ds: Any, queries: Sequence[Query], kinds: Sequence[str], split: str, learn_n: int,
                     attach: str) -> list[Result]:
    """A dataset's results; with `learn_n`, after learning that many queries per tool from its dev
    portion."""
    if not learn_n:
        return _run(ds.name, ds.tools, queries, kinds, split)
    from mcpctl.evaluation.learning import simulated

    dev = ds.select("dev")
    if not dev:
        warn(f"dataset {ds.name!r} has no dev portion to learn from; scored without learning")
        return _run(ds.name, ds.tools, queries, kinds, split)
    learned = simulated(dev, learn_n, attach)
    said = f"{learn_n}/tool from dev ({attach}: {sum(learned.uses.values())} queries)"
    return _run(ds.name, learned.apply(ds.tools), queries, kinds, split, said)


def _check_rankers(kinds: list[str] | None) -> None:
    from mcpctl.catalogue.rank import RANKER_KINDS

    for kind in kinds or ():
        if kind not in RANKER_KINDS:
            raise typer.BadParameter(f"{kind!r} is not one of: {', '.join(RANKER_KINDS)}", param_hint="'--ranker'")


def _check_from_log(project: str | None, dataset: list[Path] | None, split: str | None, learn_n: int) -> None:
    if not project:
        raise typer.BadParameter("--from-log needs --project P", param_hint="'--project'")
    if dataset:
        raise typer.BadParameter("give either --dataset or --from-log, not both", param_hint="'--dataset'")
    if split not in (None, "all", "time"):
        raise typer.BadParameter(f"{split!r} is not one of: all, time (with --from-log)", param_hint="'--split'")
    if learn_n:
        raise typer.BadParameter("--learn is for datasets; --from-log --split time learns from the log",
                                 param_hint="'--learn'")


def _check_dataset_options(split: str, learn_n: int, attach: str) -> None:
    from mcpctl.evaluation.datasets import PORTIONS
    from mcpctl.evaluation.learning import ATTACH

    if split not in PORTIONS:
        hint = " (time is for --from-log)" if split == "time" else ""
        raise typer.BadParameter(f"{split!r} is not one of: {', '.join(PORTIONS)}{hint}", param_hint="'--split'")
    if learn_n and split != "test":
        raise typer.BadParameter(f"--learn learns from the dev portion and scores the test portion; "
                                 f"--split {split} would score what it learned from", param_hint="'--split'")
    if attach not in ATTACH:
        raise typer.BadParameter(f"{attach!r} is not one of: {', '.join(ATTACH)}", param_hint="'--attach'")


def _datasets(folders: list[Path], kinds: list[str] | None, split: str, learn_n: int, attach: str) -> list[Result]:
    from mcpctl.catalogue.rank import DEFAULT_KIND
    from mcpctl.errors import MCPCtlError
    from mcpctl.evaluation.ask import evaluate_ask, is_ask_dataset, load_ask_dataset
    from mcpctl.evaluation.datasets import load_dataset

    if not folders:
        raise MCPCtlError("nothing to evaluate",
                          hint="give --dataset DIR (a folder with tools.jsonl and queries.jsonl) "
                               "or --from-log --project P")
    results: list[Result] = []
    for folder in folders:
        if is_ask_dataset(folder):       # questions over resources: ask's retrieval (docs/ask.md)
            asked = load_ask_dataset(folder)
            results.extend(evaluate_ask(asked, kind) for kind in kinds or [DEFAULT_KIND])
            continue
        ds = load_dataset(folder)
        queries = ds.select(split)
        if not queries:
            warn(f"dataset {ds.name!r} has no {split} queries; skipped")
            continue
        results.extend(_dataset_results(ds, queries, kinds or [DEFAULT_KIND], split, learn_n, attach))
    if not results:
        raise MCPCtlError(f"no {split} queries in the given datasets")
    return results


def _render(results: Sequence[Result], output: str) -> None:
    if output == "json":
        print_json([r.as_dict() for r in results])
        return
    from rich.table import Table

    from mcpctl.evaluation.metrics import METRIC_NAMES

    table = Table(box=None, pad_edge=False)
    learning = any(r.learned for r in results)
    cols = ("DATASET", "RANKER", "SPLIT", *(("LEARNED",) if learning else ()), "QUERIES", "TOOLS", *METRIC_NAMES)
    for col in cols:
        table.add_column(col, justify="left" if col in ("DATASET", "RANKER", "SPLIT", "LEARNED") else "right",
                         no_wrap=True)
    for r in results:
        table.add_row(r.dataset, r.ranker, r.portion, *((r.learned or "nothing",) if learning else ()), str(r.queries),
                      str(r.tools), *(f"{r.metrics[m]:.3f}" for m in METRIC_NAMES))
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
        split: Annotated[str | None, typer.Option(
            "--split", help="test|dev|all: which queries of each dataset (default test: MetaTool fold 4, "
            "ToolLens split test, all of a dataset without a split); with --from-log, all (default) or time "
            "(learn from the older two thirds, score the newest third).")] = None,
        learn_n: Annotated[int, typer.Option(
            "--learn", min=0, max=1000, help="Learn at most N queries per tool from each dataset's dev portion "
            "before scoring its test portion (as if each had been searched, then its tool called).")] = 0,
        attach: Annotated[str, typer.Option(
            "--attach", help="next|gold: with --learn, a query teaches the first tool of its first gold group "
            "(next, what a session calls after a search) or every gold tool.")] = "next",
        from_log: Annotated[bool, typer.Option(
            "--from-log", help="Score on (query -> tool called next) pairs recorded by the gateway.")] = False,
        project: Annotated[str | None, typer.Option(
            "--project", "-p", help="Project for --from-log.", autocompletion=complete_projects)] = None,
        output: Annotated[str, output_option(("table", "json"))] = "table",
    ) -> None:
        """Score a search ranker: R@1, R@5, R@10, MRR@10, nDCG@10 and C@10 per dataset."""
        check_format(output, _FORMATS)
        _check_rankers(ranker)
        if from_log:
            _check_from_log(project, dataset, split, learn_n)
            assert project is not None
            _render(_from_log(project, ranker, split or "all"), output)
            return
        split = split or "test"
        _check_dataset_options(split, learn_n, attach)
        _render(_datasets(dataset or [], ranker, split, learn_n, attach), output)
