"""Run a ranker over queries and average the metrics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcpctl.catalogue.rank import Ranker
from mcpctl.evaluation.datasets import Query
from mcpctl.evaluation.metrics import DEPTH, MetricTotals, score_query


@dataclass(frozen=True)
class Result:
    dataset: str
    ranker: str
    portion: str
    queries: int
    tools: int
    metrics: dict[str, float]
    learned: str | None = None      # what the ranker learned from before scoring ("10/tool from dev")

    def as_dict(self) -> dict[str, object]:
        return {"dataset": self.dataset, "ranker": self.ranker, "split": self.portion,
                "queries": self.queries, "tools": self.tools, "learned": self.learned,
                "metrics": {k: round(v, 4) for k, v in self.metrics.items()}}


def evaluate(
    ranker: Ranker,
    queries: Sequence[Query],
    *,
    progress: Callable[[int], None] | None = None,
) -> dict[str, float]:
    """Mean metrics of `ranker` over `queries`; `progress(n)` is called after every n queries."""
    totals = MetricTotals()
    step = 0
    for q in queries:
        ranking = [tool_id for tool_id, _ in ranker.search(q.text, DEPTH)]
        totals.add(score_query(ranking, q.groups))
        step += 1
        if progress is not None and step == 100:
            progress(step)
            step = 0
    if progress is not None and step:
        progress(step)
    return totals.means()
