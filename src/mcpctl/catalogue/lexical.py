"""The tools as a ranker sees them (`ToolDoc`), the `Ranker` protocol and the lexical ranker.

BM25F over server, name, description, parameters, the server's own title and instructions, and
the queries a tool was learned from (`learn.py`); pure Python. Every ranker ranks what
`intent.understand` makes of a request (its values replaced by words of their kind) and weighs
each tool by the intent's stage (`intent.IntentStage`: the request's action against the tool's
effect, values against parameters, the learned prior). `rank` chooses among rankers; `semantic`
builds on these types.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any, Final, Protocol

from mcpctl.catalogue.bm25 import BM25FIndex, BM25FParams, schema_fields
from mcpctl.catalogue.effect import ToolEffect, tool_effect
from mcpctl.catalogue.intent import Intent, IntentStage, param_kinds, understand

# A tool's learned uses (distinct sessions that searched, then called it) raise its score by at
# most PRIOR_WEIGHT, reached at PRIOR_SATURATION sessions (log scale): a bounded prior.
PRIOR_WEIGHT: Final = 0.1
PRIOR_SATURATION: Final = 50
# A request close to a query a tool was learned from adds LEARNED_NEAR times the cube of that
# closeness (the Jaccard overlap of their analysed words, the closest learned query) times the
# best weighed score: the words people used before outrank a guess at the action (the lexical
# twin of the hybrid ranker's `semantic.LEARNED_NEAR`; the cube: only a near repeat counts).
LEARNED_NEAR: Final = 1.0


@dataclass(frozen=True)
class ToolDoc:
    """One upstream tool as the ranker sees it."""

    id: str               # canonical "server/tool"
    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    # The server's own title, description and instructions (its initialize/discover reply): the
    # same for every tool of that server, ranked as a low-weight field.
    server_about: str = ""
    title: str = ""
    annotations: Mapping[str, Any] = field(default_factory=dict)
    # What the catalogue learned from its own use (`learn.py`): the queries that led to this tool,
    # and how many distinct sessions did.
    learned: tuple[str, ...] = ()
    uses: int = 0

    @classmethod
    def from_wire(cls, server: str, tool: Mapping[str, Any], server_about: str = "",
                  canonical_id: str | None = None) -> ToolDoc:
        """From a wire-format (camelCase) tool dict as listed by `server` (or as a project's
        `tools.overrides` present it: then `canonical_id` is the id it keeps)."""
        name = str(tool.get("name", ""))
        schema = tool.get("inputSchema")
        ann = tool.get("annotations")
        ann = ann if isinstance(ann, Mapping) else {}
        title = tool.get("title") or ann.get("title") or ""
        return cls(
            id=canonical_id or f"{server}/{name}",
            server=server,
            name=name,
            description=str(tool.get("description") or ""),
            input_schema=schema if isinstance(schema, Mapping) else {},
            server_about=server_about,
            title=str(title),
            annotations=ann,
        )

    @property
    def effect(self) -> ToolEffect:
        """What the tool does (`effect.tool_effect`: annotations, else its words)."""
        return tool_effect(self.name, self.description, self.annotations, self.title)

    def unlearned(self) -> ToolDoc:
        return replace(self, learned=(), uses=0) if self.learned or self.uses else self


@dataclass(frozen=True)
class Explanation:
    """Where one result's score came from (`mcpctl tools search --explain`)."""

    id: str
    score: float
    effect: str             # e.g. "reads (annotations)"
    factor: float           # the intent stage's factor (action x value x prior)
    lexical: float          # the BM25F score of the ranked text, before the stage
    semantic: float | None  # the cosine part (hybrid), before the stage
    learned: float          # the part of `score` that learned queries and uses gave (0 without)
    capped: bool            # moved below the best reading tool (a read-phrased request)


class Ranker(Protocol):
    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        """The top_k tool ids for `query` with their scores, best first."""
        ...


def doc_fields(doc: ToolDoc) -> dict[str, str]:
    """The fields BM25F indexes for one tool."""
    param_names, param_descs = schema_fields(doc.input_schema)
    return {
        "server": doc.server,
        "name": doc.name,
        "description": doc.description,
        "param_names": param_names,
        "param_descriptions": param_descs,
        "server_about": doc.server_about,
        "learned": "\n".join(doc.learned),
    }


def prior(uses: int) -> float:
    """The learned prior of a tool used in `uses` distinct sessions: 0 to 1, log scale."""
    return min(1.0, math.log1p(uses) / math.log1p(PRIOR_SATURATION)) if uses > 0 else 0.0


def intent_stage(docs: Sequence[ToolDoc], *, effects: bool = True) -> IntentStage:
    """The intent stage of a catalogue; `effects=False` for texts that are not tools (ask's
    passages): only the learned prior, if any, then applies."""
    found = [d.effect for d in docs] if effects else []
    return IntentStage([e.effect for e in found] if effects else [None] * len(docs),
                       [param_kinds(d.input_schema, d.name) for d in docs] if effects else [frozenset()] * len(docs),
                       [1.0 + PRIOR_WEIGHT * prior(d.uses) for d in docs],
                       [e.trust for e in found] if effects else None)


class LexicalRanker:
    """BM25F over the tool's fields, weighed by the intent stage; the default ranker."""

    kind: Final = "bm25"

    def __init__(self, docs: Sequence[ToolDoc], params: BM25FParams | None = None, *, intent: bool = True) -> None:
        self.fallback: str | None = None     # why a semantic ranker was asked for and this came
        self.docs = list(docs)
        self.index = BM25FIndex([d.id for d in self.docs], [doc_fields(d) for d in self.docs], params)
        self.uses_intent = intent
        self.stage = intent_stage(self.docs, effects=intent)
        self.learns = any(d.learned or d.uses for d in self.docs)
        self._unlearned: LexicalRanker | None = None
        # the learned queries' analysed words: word -> the (tool, query) pairs holding it, and each
        # pair's number of distinct words (a request meets only the pairs it shares a word with)
        self._learned_sizes: dict[tuple[int, int], int] = {}
        self._learned_words: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(self.docs):
            for j, q in enumerate(d.learned):
                words = set(self.index.analyzer(q))
                self._learned_sizes[i, j] = len(words)
                for w in words:
                    self._learned_words.setdefault(w, []).append((i, j))

    def __len__(self) -> int:
        return len(self.docs)

    def intent(self, query: str) -> Intent:
        return understand(query) if self.uses_intent else Intent(query, query, None, frozenset())

    def scores(self, query: str) -> tuple[dict[int, float], dict[int, float], Intent]:
        """(BM25F scores of the ranked text, the same weighed by the stage, the intent)."""
        intent = self.intent(query)
        base = self.index.scores(intent.text)
        weighed = self.stage.apply(base, intent)
        if self._learned_words and weighed:
            self._near(query, weighed)
        return base, weighed, intent

    def _near(self, query: str, weighed: dict[int, float]) -> None:
        """Add to `weighed` what being close to a tool's learned queries gives (LEARNED_NEAR)."""
        near = self.closeness(query)
        if not near:
            return
        top = max(weighed.values())
        for i, closeness in near.items():
            weighed[i] = weighed.get(i, 0.0) + LEARNED_NEAR * closeness ** 3 * top

    def closeness(self, query: str) -> dict[int, float]:
        """Per tool with a learned query sharing a word with `query`: the closest one's Jaccard
        overlap of analysed words with it (0 to 1)."""
        if not self._learned_words:
            return {}
        words = set(self.index.analyzer(query))
        shared = Counter(chain.from_iterable(self._learned_words.get(w, ()) for w in words))
        near: dict[int, float] = {}
        sizes, n_words = self._learned_sizes, len(words)
        for pair, n in shared.items():
            jaccard = n / (n_words + sizes[pair] - n)
            if jaccard > near.get(pair[0], 0.0):
                near[pair[0]] = jaccard
        return near

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        if top_k <= 0:
            return []
        weighed = self.scores(query)[1]
        # Ties break on catalogue order, so results are stable across runs.
        best = heapq.nsmallest(top_k, weighed.items(), key=lambda kv: (-kv[1], kv[0]))
        return [(self.index.ids[d], s) for d, s in best]

    def unlearned(self) -> LexicalRanker:
        """The same ranker over the same tools, without what was learned (for `explain`)."""
        if not self.learns:
            return self
        if self._unlearned is None:
            self._unlearned = LexicalRanker([d.unlearned() for d in self.docs], self.index.params,
                                            intent=self.uses_intent)
        return self._unlearned

    def explain(self, query: str, top_k: int) -> list[Explanation]:
        base, weighed, intent = self.scores(query)
        plain = self.unlearned().scores(query)[1] if self.learns else weighed
        factors = self.stage.factors(intent)
        out = []
        for tool_id, score in self.search(query, top_k):
            i = self.index.position(tool_id)
            factor = factors[i] if factors else 1.0
            out.append(Explanation(tool_id, score, self.docs[i].effect.label(), factor, base.get(i, 0.0), None,
                                   score - plain.get(i, 0.0), score < base.get(i, 0.0) * factor * (1 - 1e-9)))
        return out


def docs_from_catalogue(catalogue: Iterable[tuple[str, Iterable[Mapping[str, Any]]]],
                        about: Mapping[str, str] | None = None) -> list[ToolDoc]:
    """ToolDocs from (server, wire-format tool dicts) pairs; `about`: server -> its about text."""
    about = about or {}
    return [ToolDoc.from_wire(server, tool, about.get(server, "")) for server, tools in catalogue for tool in tools]
