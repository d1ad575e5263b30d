"""`mcpctl eval`'s runs, without the CLI: rankers scored on datasets, or on a project's recorded
searches (`score_log`, `score_project_log`), with the learning each asks for.

A run says what it is doing through a `Reporter` (the CLI's shows a status line and a progress bar
on a terminal and prints warnings; `QUIET` says nothing): `indexing` while a ranker embeds a new
catalogue, `progress` while queries are scored, `note` for a ranker's fallback (said once per
process by the CLI), `warn` for what was left out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcpctl.audit.records import SearchEvidence
    from mcpctl.catalogue.rank import ToolDoc
    from mcpctl.evaluation.datasets import Query
    from mcpctl.evaluation.evaluate import Result
    from mcpctl.resources.store import ResourceStore


class Reporter(Protocol):
    """What a run says while it runs."""

    def indexing(self, text: str) -> AbstractContextManager[object]: ...
    def progress(self, label: str, total: int) -> AbstractContextManager[Callable[[int], None]]: ...
    def note(self, message: str) -> None: ...
    def warn(self, message: str) -> None: ...


class _Quiet:
    def indexing(self, text: str) -> AbstractContextManager[object]:
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def progress(self, label: str, total: int) -> Iterator[Callable[[int], None]]:
        yield lambda n: None

    def note(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        pass


QUIET: Reporter = _Quiet()


def score(name: str, docs: Sequence[ToolDoc], queries: Sequence[Query], kinds: Sequence[str], portion: str,
          report: Reporter = QUIET, learned: str | None = None) -> list[Result]:
    """One `Result` per ranker kind: `queries` ranked over `docs`."""
    from mcpctl.catalogue.rank import build_ranker, describe
    from mcpctl.catalogue.rank import label as ranker_label
    from mcpctl.evaluation.evaluate import Result, evaluate

    results: list[Result] = []
    for kind in kinds:
        if kind != "bm25":              # embedding a new catalogue takes a while
            with report.indexing(f"{name}: indexing {len(docs)} tools for {kind}…"):
                ranker = build_ranker(docs, kind)
        else:
            ranker = build_ranker(docs, kind)
        label = ranker_label(ranker, kind)
        if getattr(ranker, "fallback", None):
            report.note(f"ranker {describe(ranker, kind)}")
        with report.progress(f"{name} ({label})", len(queries)) as advance:
            metrics = evaluate(ranker, queries, progress=advance)
        results.append(Result(name, label, portion, len(queries), len(docs), metrics, learned))
    return results


def score_log(project: str, spec: Any, catalogue: Callable[[], list[ToolDoc]], evidence: list[Any],
              kinds: Sequence[str] | None, split: str = "all", report: Reporter = QUIET) -> list[Result]:
    """Score on the project's recorded (query -> tool called next) pairs (`evidence`: the log's
    successful `search_evidence`) over what its search_tools ranks (`catalogue()`, read once there
    are pairs); `split` "time" learns from the older two thirds first. MCPCtlError when there is
    nothing to score, saying why."""
    from mcpctl.errors import MCPCtlError
    from mcpctl.evaluation.datasets import Query

    pairs = len(evidence)
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
    docs = catalogue()
    known = {d.id for d in docs}
    evidence = [e for e in evidence if e.tool in known]
    gone = pairs - len(evidence)
    if gone:
        report.warn(f"{gone} of {pairs} recorded pairs name a tool no longer in the catalogue; left out")
    if not evidence:
        raise MCPCtlError(f"none of the {pairs} recorded pairs of project {project!r} "
                          "names a tool in its current catalogue")
    kinds = kinds or [spec.search.ranker]
    if split != "time":
        queries = [Query(f"log-{i}", e.query, (frozenset([e.tool]),)) for i, e in enumerate(evidence)]
        return score(f"log:{project}", docs, queries, kinds, "log", report)
    return _time_split(project, spec, docs, evidence, kinds, report)


def score_project_log(project: str, store: ResourceStore, searches: Callable[[str], Iterable[SearchEvidence]],
                      catalogue: Callable[[], list[ToolDoc]], kinds: Sequence[str] | None, split: str = "all",
                      report: Reporter = QUIET) -> list[Result]:
    """`eval --from-log`: `score_log` on project `project` of `store` (NotFound with did-you-mean)
    and its successful recorded searches (`searches(project)`: the log's `search_evidence`)."""
    from mcpctl.resources.kinds import ProjectSpec

    spec = ProjectSpec.from_resource(store.get("Project", project))
    evidence = [e for e in searches(project) if e.ok]
    return score_log(project, spec, catalogue, evidence, kinds, split, report)


def _time_split(project: str, spec: Any, docs: list[ToolDoc], evidence: list[Any], kinds: Sequence[str],
                report: Reporter) -> list[Result]:
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
        report.warn(f"nothing learned from the {len(older)} older pair(s): no tool was called after a search in "
                    f"{settings.min_sessions} distinct sessions (search.learn.minSessions)")
    queries = [Query(f"log-{i}", e.query, (frozenset([e.tool]),)) for i, e in enumerate(newer)]
    said = f"{len(older)} older pairs ({sum(learned.uses.values())} uses of {len(learned.uses)} tools)"
    return (score(f"log:{project}", docs, queries, kinds, "time", report, "nothing")
            + score(f"log:{project}", learned.apply(docs), queries, kinds, "time", report, said))


def _dataset_results(ds: Any, queries: Sequence[Query], kinds: Sequence[str], split: str, learn_n: int,
                     attach: str, report: Reporter) -> list[Result]:
    """A dataset's results; with `learn_n`, after learning that many queries per tool from its dev
    portion."""
    if not learn_n:
        return score(ds.name, ds.tools, queries, kinds, split, report)
    from mcpctl.evaluation.learning import simulated

    dev = ds.select("dev")
    if not dev:
        report.warn(f"dataset {ds.name!r} has no dev portion to learn from; scored without learning")
        return score(ds.name, ds.tools, queries, kinds, split, report)
    learned = simulated(dev, learn_n, attach)
    said = f"{learn_n}/tool from dev ({attach}: {sum(learned.uses.values())} queries)"
    return score(ds.name, learned.apply(ds.tools), queries, kinds, split, report, said)


def score_datasets(folders: list[Path], kinds: list[str] | None, split: str, learn_n: int = 0,
                   attach: str = "next", report: Reporter = QUIET) -> list[Result]:
    """Score every dataset folder: tool retrieval (`split`'s queries, after learning `learn_n` per
    tool from dev), or ask's retrieval for a folder of resources and questions."""
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
            report.warn(f"dataset {ds.name!r} has no {split} queries; skipped")
            continue
        results.extend(_dataset_results(ds, queries, kinds or [DEFAULT_KIND], split, learn_n, attach, report))
    if not results:
        raise MCPCtlError(f"no {split} queries in the given datasets")
    return results
