"""Group-based retrieval metrics, as defined by the evaluation data's README.

Gold is a list of groups, one per required tool; a group is found when ANY of its members is
retrieved. For a ranking r_1, r_2, ... and groups G_1..G_n:

- R@k: the fraction of groups with a member among r_1..r_k.
- MRR@10: 1 / the rank of the first r_i that is in any group (0 if none in the top 10).
- nDCG@10: gain 1 at rank i when r_i finds a group not found at an earlier rank (a group counts
  once, however many of its members appear); DCG = sum gain_i / log2(i + 1), normalised by the
  ideal DCG = sum_{i=1..min(n, 10)} 1 / log2(i + 1).
- C@10: 1 if every group has a member in the top 10, else 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

METRIC_NAMES: Final = ("R@1", "R@5", "R@10", "MRR@10", "nDCG@10", "C@10")
DEPTH: Final = 10


def _groups_found_by_rank(ranking: Sequence[str], groups: Sequence[frozenset[str]], depth: int) -> list[int]:
    """For each group, the 1-based rank at which it is first found (0 if not in the top depth)."""
    found = [0] * len(groups)
    for rank, tool in enumerate(ranking[:depth], start=1):
        for g, members in enumerate(groups):
            if not found[g] and tool in members:
                found[g] = rank
    return found


def score_query(ranking: Sequence[str], groups: Sequence[frozenset[str]]) -> dict[str, float]:
    """Every metric in METRIC_NAMES for one ranked list of tool ids against its gold groups."""
    if not groups:
        raise ValueError("a query needs at least one gold group")
    n = len(groups)
    found = _groups_found_by_rank(ranking, groups, DEPTH)

    def recall(k: int) -> float:
        return sum(1 for r in found if 0 < r <= k) / n

    gold = set().union(*groups)
    mrr = 0.0
    for rank, tool in enumerate(ranking[:DEPTH], start=1):
        if tool in gold:
            mrr = 1.0 / rank
            break
    # A rank can find two groups at once (a tool listed in both): it still earns one gain,
    # as one retrieved item is worth at most 1.
    first_ranks = {r for r in found if r}
    dcg = sum(1.0 / math.log2(r + 1) for r in first_ranks)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(n, DEPTH) + 1))
    return {
        "R@1": recall(1),
        "R@5": recall(5),
        "R@10": recall(10),
        "MRR@10": mrr,
        "nDCG@10": dcg / idcg,
        "C@10": 1.0 if all(found) else 0.0,
    }


@dataclass
class MetricTotals:
    """Running sums of per-query metrics; `means()` gives the averages."""

    count: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(METRIC_NAMES, 0.0))

    def add(self, scores: dict[str, float]) -> None:
        self.count += 1
        for name in METRIC_NAMES:
            self.sums[name] += scores[name]

    def means(self) -> dict[str, float]:
        return {name: (self.sums[name] / self.count if self.count else 0.0) for name in METRIC_NAMES}


def mean_scores(rankings: Iterable[tuple[Sequence[str], Sequence[frozenset[str]]]]) -> dict[str, float]:
    """Average metrics over (ranking, groups) pairs."""
    totals = MetricTotals()
    for ranking, groups in rankings:
        totals.add(score_query(ranking, groups))
    return totals.means()
