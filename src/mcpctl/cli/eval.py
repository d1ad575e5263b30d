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
printed on stderr. The runs are `evaluation.runs`'s; this module checks options and renders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

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
    from mcpctl.audit.records import SearchEvidence
    from mcpctl.catalogue.rank import ToolDoc
    from mcpctl.evaluation.evaluate import Result

_FORMATS = ("table", "json")
_PROGRESS_MIN_QUERIES = 500   # below this a run takes well under a second


class _Reporter:
    """What a run says on stderr: a status while a ranker indexes and a progress bar for long runs
    (on a terminal only), a ranker's fallback once per process, warnings."""

    noted: ClassVar[set[str]] = set()

    def indexing(self, text: str) -> AbstractContextManager[object]:
        return err.status(text) if err.is_terminal else nullcontext()

    def progress(self, label: str, total: int) -> AbstractContextManager[Callable[[int], None]]:
        return _progress(label, total)

    def note(self, message: str) -> None:
        if message not in self.noted:
            self.noted.add(message)
            warn(message)

    def warn(self, message: str) -> None:
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
    from mcpctl.evaluation.runs import score_project_log
    from mcpctl.presentation.catalogue import cached_catalogue
    from mcpctl.presentation.search import tool_docs

    from ._common import invocation_log, the_cache

    def catalogue() -> list[ToolDoc]:         # what search_tools ranks
        cache = the_cache()
        cached = cached_catalogue(project, the_store(), cache)
        for server in cached.unlisted:
            warn(f"server {server!r} has not been listed yet; its tools are not in the catalogue")
        return tool_docs({t.canonical_id: t for t in cached.view().searchable}, cache)

    def searches(name: str) -> list[SearchEvidence]:
        with invocation_log() as log:         # the team database's log when a database URL is set
            return log.search_evidence(name)

    return score_project_log(project, the_store(), searches, catalogue, kinds, split, _Reporter())


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


def _render(results: Sequence[Result], output: str) -> None:
    if output == "json":
        print_json([r.as_dict() for r in results])
        return
    from mcpctl.evaluation.report import results_table

    out.print(results_table(results))


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
        from mcpctl.evaluation.runs import score_datasets

        _render(score_datasets(dataset or [], ranker, split, learn_n, attach, _Reporter()), output)
