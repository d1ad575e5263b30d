"""What a catalogue learns from its own use: the queries that led to each tool (no I/O).

Where a project records `search_tools` queries (`search.recordQueries`), the invocation log holds,
for each search, the tool the same session called next and how that call ended
(`audit.records.SearchEvidence`). Each (query -> tool called next, answered without error) pair is
evidence for that tool. `learn` turns the pairs of a window into, per tool:

- the queries that led to it: their words join the tool's searchable text (a BM25F field of
  their own, and, with the hybrid ranker, one vector each that pulls the tool's semantic score
  towards a request it is close to);
- how many distinct sessions did: a bounded prior on the tool's score (`lexical.prior`).

A tool learns only once at least `min_sessions` distinct sessions searched and then called it, so
one session cannot teach the catalogue anything alone. What is kept is bounded: at most
MAX_QUERIES_PER_TOOL queries per tool (those most sessions asked, then the newest), each cut to
MAX_QUERY_CHARS, at most MAX_QUERIES in all (every tool's best query first, then its second best,
...), and at most MAX_PAIRS pairs read (the newest). Nothing here leaves the store:
the log is the project's own SQLite file or the team's PostgreSQL, which a team's gateways share.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

from mcpctl.resources.settings import DEFAULT_LEARN_MIN_SESSIONS as DEFAULT_MIN_SESSIONS
from mcpctl.resources.settings import DEFAULT_LEARN_WINDOW_DAYS as DEFAULT_WINDOW_DAYS

if TYPE_CHECKING:
    from mcpctl.audit.records import SearchEvidence
    from mcpctl.catalogue.lexical import ToolDoc

MAX_QUERIES_PER_TOOL: Final = 20
MAX_QUERIES: Final = 5_000          # in all: each tool's best first, then its second best, ...
MAX_QUERY_CHARS: Final = 200
MAX_PAIRS: Final = 50_000
_SPACE_RE: Final = re.compile(r"\s+")


def normal(query: str) -> str:
    """A query as it is learned: whitespace collapsed, lowercased, cut to MAX_QUERY_CHARS."""
    return _SPACE_RE.sub(" ", query).strip().lower()[:MAX_QUERY_CHARS]


@dataclass(frozen=True)
class Learned:
    """Per tool: the queries learned (most sessions first) and the distinct sessions that used it."""

    queries: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uses: Mapping[str, int] = field(default_factory=dict)
    pairs: int = 0              # pairs read (answered without error, in the window)

    def __bool__(self) -> bool:
        return bool(self.uses)

    def apply(self, docs: Sequence[ToolDoc]) -> list[ToolDoc]:
        """`docs` with what was learned for each (the rest unchanged)."""
        return [replace(d, learned=self.queries.get(d.id, ()), uses=self.uses.get(d.id, 0))
                if d.id in self.uses or d.learned or d.uses else d for d in docs]

    def key(self) -> tuple[tuple[str, tuple[str, ...], int], ...]:
        """What decides a ranker's index: equal keys rank the same."""
        return tuple((t, self.queries.get(t, ()), n) for t, n in sorted(self.uses.items()))


NOTHING: Final = Learned()


def learn(evidence: Iterable[SearchEvidence], *, min_sessions: int = DEFAULT_MIN_SESSIONS,
          window_days: float = DEFAULT_WINDOW_DAYS, now: float | None = None,
          known: Iterable[str] | None = None) -> Learned:
    """What the pairs in the window teach (see the module's text). `known`: the catalogue's tool
    ids (a pair naming another tool is left out)."""
    now = time.time() if now is None else now
    since = now - window_days * 86400.0
    tools = set(known) if known is not None else None
    sessions: dict[str, set[str]] = defaultdict(set)
    asked: dict[tuple[str, str], tuple[set[str], float]] = {}
    pairs = 0
    recent = sorted((e for e in evidence if e.ok and since <= e.ts <= now), key=lambda e: e.ts)[-MAX_PAIRS:]
    for e in recent:
        if tools is not None and e.tool not in tools:
            continue
        query = normal(e.query)
        if not query:
            continue
        pairs += 1
        sessions[e.tool].add(e.session)
        seen, _ = asked.setdefault((e.tool, query), (set(), e.ts))
        seen.add(e.session)
        asked[(e.tool, query)] = (seen, e.ts)
    uses = {t: len(s) for t, s in sessions.items() if len(s) >= max(1, min_sessions)}
    by_tool: dict[str, list[tuple[int, float, str]]] = defaultdict(list)
    for (tool, query), (seen, last) in asked.items():
        if tool in uses:
            by_tool[tool].append((len(seen), last, query))
    ranked = {t: [q for _, _, q in sorted(rows, key=lambda r: (-r[0], -r[1], r[2]))[:MAX_QUERIES_PER_TOOL]]
              for t, rows in by_tool.items()}
    return Learned(_bounded(ranked, uses), uses, pairs)


def _bounded(ranked: Mapping[str, list[str]], uses: Mapping[str, int]) -> dict[str, tuple[str, ...]]:
    """At most MAX_QUERIES queries in all: rank by rank, the most used tools first."""
    order = sorted(ranked, key=lambda t: (-uses[t], t))
    kept: dict[str, list[str]] = {t: [] for t in order}
    left = MAX_QUERIES
    for rank in range(MAX_QUERIES_PER_TOOL):
        for t in order:
            if left and rank < len(ranked[t]):
                kept[t].append(ranked[t][rank])
                left -= 1
    return {t: tuple(qs) for t, qs in kept.items() if qs}
