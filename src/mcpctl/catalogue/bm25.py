"""BM25F over the fields of a tool: a pure-Python inverted index with precomputed weights.

Each tool is split into fields (server, name, description, parameter names, parameter
descriptions); a term's pseudo-frequency in a tool is the weighted sum of its length-normalised
frequency in each field, and BM25's saturation is applied once to that sum (Robertson et al.,
"Simple BM25 extension to multiple weighted fields", 2004):

    tf~(t, d) = sum_f w_f * tf_f(t, d) / (1 - b + b * len_f(d) / avglen_f)
    score(q, d) = sum over distinct t in q of idf(t) * tf~ * (k1 + 1) / (k1 + tf~)
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

Everything but the query is computed at build time, so a query is a walk over the postings of
its distinct terms plus a top-k heap.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mcpctl.catalogue.analyze import analyze

# The server's own title, description and instructions: one text shared by all its tools, so it
# acts as a prior on the server; low weight: half a description's. On the dev portion of
# user_requests, weights 0 to 1 score the same (R@5 .569), 2 loses (.556): docs/ranking.md.
SERVER_ABOUT_WEIGHT: Final = 0.5
# The queries a tool was learned from (`learn.py`): what people asked before they called it.
LEARNED_WEIGHT: Final = 0.5


@dataclass(frozen=True)
class BM25FParams:
    """Field weights and BM25 constants; defaults chosen on the dev data (docs/ranking.md)."""

    weights: Mapping[str, float] = field(default_factory=lambda: {
        "server": 2.0, "name": 1.5, "description": 1.0, "param_names": 2.0, "param_descriptions": 1.0,
        "server_about": SERVER_ABOUT_WEIGHT, "learned": LEARNED_WEIGHT,
    })
    k1: float = 3.0
    b: float = 0.3


def schema_fields(input_schema: Mapping[str, Any]) -> tuple[str, str]:
    """The top-level parameter names and their descriptions of a JSON Schema, as two texts."""
    props = input_schema.get("properties") if isinstance(input_schema, Mapping) else None
    if not isinstance(props, Mapping):
        return "", ""
    names: list[str] = []
    descs: list[str] = []
    for key, spec in props.items():
        names.append(str(key))
        # Only `description`: a property's `title` is mostly generated from its name
        # ("max_results" -> "Max Results") and would count the name twice.
        if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
            descs.append(spec["description"])
    return " ".join(names), " ".join(descs)


class BM25FIndex:
    """An immutable BM25F index over documents given as {field: text} mappings."""

    def __init__(
        self,
        ids: Sequence[str],
        fields: Sequence[Mapping[str, str]],
        params: BM25FParams | None = None,
        analyzer: Callable[[str], list[str]] = analyze,
    ) -> None:
        if len(ids) != len(fields):
            raise ValueError("ids and fields differ in length")
        self.params = params or BM25FParams()
        self.analyzer = analyzer
        self.ids: list[str] = list(ids)
        self._positions: dict[str, int] | None = None
        n = len(self.ids)
        weights = {f: w for f, w in self.params.weights.items() if w > 0}
        k1, b = self.params.k1, self.params.b

        per_field: dict[str, list[Counter[str]]] = {f: [] for f in weights}
        lengths: dict[str, list[int]] = {f: [] for f in weights}
        for doc in fields:
            for f in weights:
                terms = analyzer(doc.get(f, "") or "")
                per_field[f].append(Counter(terms))
                lengths[f].append(len(terms))
        avglen = {f: (sum(ls) / n if n and sum(ls) else 1.0) for f, ls in lengths.items()}

        # tf~ per (term, doc), gathered field by field.
        pseudo: dict[str, dict[int, float]] = {}
        for f, w in weights.items():
            lens, avg = lengths[f], avglen[f]
            for d, counts in enumerate(per_field[f]):
                if not counts:
                    continue
                norm = w / (1.0 - b + b * lens[d] / avg)
                for term, tf in counts.items():
                    slot = pseudo.setdefault(term, {})
                    slot[d] = slot.get(d, 0.0) + tf * norm

        self.postings: dict[str, tuple[tuple[int, float], ...]] = {}
        for term, docs in pseudo.items():
            df = len(docs)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            self.postings[term] = tuple(
                (d, idf * t * (k1 + 1.0) / (k1 + t)) for d, t in docs.items()
            )

    def __len__(self) -> int:
        return len(self.ids)

    def position(self, doc_id: str) -> int:
        """The index of a document by its id."""
        if self._positions is None:
            self._positions = {d: i for i, d in enumerate(self.ids)}
        return self._positions[doc_id]

    def scores(self, query: str) -> dict[int, float]:
        """Score of every document matching at least one query term, by document index."""
        acc: dict[int, float] = {}
        get = acc.get
        for term in dict.fromkeys(self.analyzer(query)):
            for d, w in self.postings.get(term, ()):
                acc[d] = get(d, 0.0) + w
        return acc

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        if top_k <= 0:
            return []
        acc = self.scores(query)
        # Ties break on catalogue order, so results are stable across runs.
        best = heapq.nsmallest(top_k, acc.items(), key=lambda kv: (-kv[1], kv[0]))
        return [(self.ids[d], s) for d, s in best]
