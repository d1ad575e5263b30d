"""Learning from use, measured on a dataset: queries of one portion stand for recorded traffic.

`simulated(queries, per_tool, attach)` treats each query as one session that searched for it and
then called a tool, and learns (`catalogue.learn`) at most `per_tool` queries per tool, taken in
an order that does not depend on how the dataset's file is sorted (`arrival`: by the SHA-1 of each
query's text, as MetaTool's folds are drawn). Real traffic arrives in no particular order of its
words; a file may be sorted (MetaTool's queries are, alphabetically within each tool, so "the first
10 of the portion" were ten questions beginning "Can I" or "Can you", and 10 learned a tool gave
R@5 .872 on its test portion where any order independent of the sort gives .907-.910:
docs/ranking.md). Which tool a query leads to is the open question of real traffic:

- `next` (the default): the first tool of the query's first gold group only, as a session calls
  one tool after a search (RANKING.md: "real traffic attaches a query to the tool called after it,
  not to every gold tool");
- `gold`: every tool of every gold group.

`mcpctl eval --learn K` learns from the dataset's dev portion and scores its test portion;
`--from-log --split time` learns from the older part of the project's own log and scores the
newer part (`time_split`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

from mcpctl.audit.records import SearchEvidence
from mcpctl.catalogue.learn import Learned, learn
from mcpctl.evaluation.datasets import Query

ATTACH: Final = ("next", "gold")
# `--split time`: the newest share of the recorded pairs is scored, the rest learned from.
SCORED_SHARE: Final = 1 / 3


def _tools(query: Query, attach: str) -> list[str]:
    if attach == "gold":
        return sorted({t for g in query.groups for t in g})
    return [sorted(query.groups[0])[0]] if query.groups else []


def arrival(queries: Iterable[Query]) -> list[Query]:
    """`queries` in the order a simulation takes them as traffic: by the SHA-1 of their text (then
    their id), the same whatever order a dataset's file lists them in."""
    return sorted(queries, key=lambda q: (hashlib.sha1(q.text.encode("utf-8")).digest(), q.id))


def simulated(queries: Sequence[Query], per_tool: int, attach: str = "next") -> Learned:
    """What a catalogue would learn if each of `queries` were one session's search followed by a
    call of its tool(s), keeping at most `per_tool` queries per tool (the first to arrive:
    `arrival`)."""
    if attach not in ATTACH:
        raise ValueError(f"unknown attach {attach!r}; expected one of: {', '.join(ATTACH)}")
    taken: Counter[str] = Counter()
    evidence: list[SearchEvidence] = []
    for n, q in enumerate(arrival(queries)):
        for tool in _tools(q, attach):
            if taken[tool] < per_tool:
                taken[tool] += 1
                evidence.append(SearchEvidence(q.text, tool, f"s{n}", float(n), True))
    return learn(evidence, min_sessions=1, window_days=1e9, now=float(len(queries)))


def time_split(evidence: Iterable[SearchEvidence], scored_share: float = SCORED_SHARE
               ) -> tuple[list[SearchEvidence], list[SearchEvidence], float]:
    """(the older pairs, to learn from; the newer ones, to score; the time between them): the
    newest `scored_share` of the answered pairs, by the time of their search."""
    ordered = sorted((e for e in evidence if e.ok), key=lambda e: e.ts)
    cut = len(ordered) - max(1, round(len(ordered) * scored_share)) if ordered else 0
    split_at = ordered[cut].ts if ordered else 0.0
    return ordered[:cut], ordered[cut:], split_at
