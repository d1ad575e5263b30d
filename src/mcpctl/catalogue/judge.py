"""Judging tools one by one and in pairs: what a tool can do beyond reading, and which tools a
model cannot tell apart (no I/O, no `mcp`). Used by `mcpctl surface`.

- `reach(tool)`: write, delete or send outward, from the upstream's annotations where given,
  else a labelled heuristic (the verb a name leads with, else its description's first word: the
  verb lists of `effect.py`, which search's effect classes read too);
- `collisions(tools)`: upstream tool names several servers list;
- `near_duplicates(tools)`: cross-server pairs whose descriptions are nearly the same.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from mcpctl.catalogue import effect
from mcpctl.catalogue.analyze import analyze

if TYPE_CHECKING:
    from mcpctl.catalogue.tool import CatalogueTool

# Cosine of TF-IDF vectors of the analysed descriptions (IDF over the project's enabled tools).
# Measured on the example, npm reference and LiveMCPBench servers together (237 tools): pairs a
# model cannot tell apart score 0.77-1.0 (calc/add ~ everything/get-sum 0.77, fs/read_text_file ~
# filesystem/read_file 0.95); the best unrelated pair scored 0.65
# (arxiv-mcp-server/search_papers ~ mcp-simple-arxiv/list_categories).
NEAR_DUPLICATE_THRESHOLD: Final = 0.70
SIMILARITY_METHOD: Final = "cosine of TF-IDF vectors of the analysed descriptions (identifiers split, stemmed)"

ANNOTATION_NOTE: Final = ("Annotations (readOnlyHint, destructiveHint, openWorldHint) are the upstream's own hints, "
                          "never a security boundary; tools without them are judged by a name heuristic.")

WRITE, DELETE, SEND, READ = "write", "delete", "send", "read"
ANNOTATIONS, HEURISTIC = "annotations", "heuristic"


@dataclass(frozen=True)
class Reach:
    """What a tool can do beyond reading: `kinds` is a subset of (write, delete, send)."""

    kinds: tuple[str, ...]
    source: str                     # "annotations" | "heuristic"
    evidence: str

    @property
    def can_write(self) -> bool:
        return bool(self.kinds)


@dataclass(frozen=True)
class Collision:
    name: str
    ids: tuple[str, ...]


@dataclass(frozen=True)
class NearDuplicate:
    a: str
    b: str
    score: float
    same_name: bool
    description_a: str
    description_b: str


# -- write reach -------------------------------------------------------------------------------------

# Which reach each verb group of `effect.py` gives: writing of any kind writes; sending is its own.
_REACH_OF_VERB: Final = {
    effect.DELETE: (WRITE, DELETE), effect.SEND: (SEND,), effect.RECORD: (WRITE,), effect.CHANGE: (WRITE,),
    effect.RUN: (WRITE,),
}


def reach(tool: CatalogueTool) -> Reach:
    """From `readOnlyHint`/`destructiveHint` when the upstream gave either (missing hints take the
    spec's defaults: not read-only, destructive), with `openWorldHint: true` on a tool that is not
    read-only meaning it sends outward. Else a heuristic: the verb a tool name leads with
    (`delete_note`, `getPosts`, `force_terminate`, `search_and_replace`), else the first word of
    its description ("Deletes ...", or the second after an adverb: "Permanently delete ...");
    no verb found counts as read. Nouns later in a name are not verbs (`get_posts` reads)."""
    ann = tool.wire.get("annotations")
    ann = ann if isinstance(ann, Mapping) else {}
    ro, de, ow = ann.get("readOnlyHint"), ann.get("destructiveHint"), ann.get("openWorldHint")
    if isinstance(ro, bool) or isinstance(de, bool):
        given = ", ".join(f"{k}={str(v).lower()}" for k, v in (("readOnlyHint", ro), ("destructiveHint", de),
                                                                ("openWorldHint", ow)) if isinstance(v, bool))
        if ro is True and de is not True:
            return Reach((), ANNOTATIONS, given)
        kinds = [WRITE]
        if de is not False:
            kinds.append(DELETE)
            if de is None:
                given += " (destructiveHint not given: the spec's default is true)"
        if ow is True:
            kinds.append(SEND)
        return Reach(tuple(kinds), ANNOTATIONS, given)
    found, where = effect.name_verb(tool.name), "name"
    if found is None:
        found, where = effect.description_verb(tool.description), "description"
    if found is None:
        return Reach((), HEURISTIC, "no write, delete or send verb in the name or description")
    kind, word = found
    if kind == effect.READ:
        return Reach((), HEURISTIC, f"{where}: read verb {word!r}")
    return Reach(_REACH_OF_VERB[kind], HEURISTIC, f"{where}: {kind} verb {word!r}")


# -- collisions and near-duplicates ------------------------------------------------------------------


def collisions(tools: Sequence[CatalogueTool]) -> list[Collision]:
    """Upstream tool names that several servers list (exact names), most servers first."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for t in tools:
        by_name[t.name].append(t.canonical_id)
    found = [Collision(name, tuple(ids)) for name, ids in by_name.items()
             if len({i.split("/", 1)[0] for i in ids}) > 1]
    return sorted(found, key=lambda c: (-len(c.ids), c.name))


def near_duplicates(tools: Sequence[CatalogueTool], threshold: float = NEAR_DUPLICATE_THRESHOLD
                    ) -> list[NearDuplicate]:
    """Every cross-server pair whose descriptions score at least `threshold`, best first."""
    return near_duplicate_pairs(tools, threshold)[0]


def near_duplicate_pairs(tools: Sequence[CatalogueTool], threshold: float = NEAR_DUPLICATE_THRESHOLD,
                         limit: int | None = None) -> tuple[list[NearDuplicate], int]:
    """The best `limit` (all: None) cross-server pairs whose descriptions score at least
    `threshold` (cosine of TF-IDF vectors of the analysed descriptions, IDF over `tools`), best
    first (ties in catalogue order), and how many such pairs there are in all.

    Exact and close to linear in the catalogue's distinct descriptions: tools whose analysed
    descriptions are the same share one vector (a catalogue that registers one server many times
    has as many pairs as copies squared, so they are counted, and listed only up to `limit`), and
    distinct vectors are compared by prefix filtering (Bayardo et al.'s All-Pairs): each unit
    vector's terms ordered rarest first, its *prefix* is the shortest run of them after which the
    rest weighs less than `threshold`. Two vectors sharing no term of one's prefix cannot reach the
    threshold (their dot product is at most that suffix's norm), so only pairs sharing a prefix
    term are scored, exactly. Common words cost nothing: they sit in suffixes."""
    vectors, members = _distinct_vectors(tools)
    servers = [t.server for t in tools]
    levels = sorted(_similar(vectors, threshold), key=lambda x: (-x[0], x[1], x[2]))
    total = sum(_cross_count(members[a], members[b], servers, a == b) for _, a, b in levels)
    pairs: list[NearDuplicate] = []
    for score, a, b in levels:
        for i, j in _cross_pairs(members[a], members[b], servers, a == b):
            if limit is not None and len(pairs) >= limit:
                break
            ti, tj = tools[i], tools[j]
            pairs.append(NearDuplicate(ti.canonical_id, tj.canonical_id, round(min(score, 1.0), 3),
                                       ti.name == tj.name, ti.description, tj.description))
    return sorted(pairs, key=lambda p: (-p.score, p.a, p.b)), total


def _distinct_vectors(tools: Sequence[CatalogueTool]) -> tuple[list[dict[str, float]], list[list[int]]]:
    """The distinct unit vectors of the tools' descriptions, and each one's tools (indices, in order)."""
    index: dict[tuple[tuple[str, float], ...], int] = {}
    vectors: list[dict[str, float]] = []
    members: list[list[int]] = []
    for i, vec in enumerate(_unit_vectors(tools)):
        if not vec:
            continue
        key = tuple(sorted(vec.items()))
        k = index.setdefault(key, len(vectors))
        if k == len(vectors):
            vectors.append(vec)
            members.append([])
        members[k].append(i)
    return vectors, members


def _similar(vectors: Sequence[Mapping[str, float]], threshold: float) -> list[tuple[float, int, int]]:
    """(score, a, b) for a <= b, each distinct vector with itself and every other at >= threshold."""
    postings: dict[str, list[int]] = defaultdict(list)
    for i, vec in enumerate(vectors):
        for term in vec:
            postings[term].append(i)
    found = [(_dot(vec, vec), i, i) for i, vec in enumerate(vectors)]
    scored: set[tuple[int, int]] = set()
    for i, vec in enumerate(vectors):
        for term in _prefix(vec, postings, threshold):
            for j in postings[term]:
                key = (i, j) if i < j else (j, i)
                if j != i and key not in scored:
                    scored.add(key)
                    found.append((_dot(vectors[key[0]], vectors[key[1]]), *key))
    return [f for f in found if f[0] >= threshold - 1e-9]


def _cross_pairs(a: Sequence[int], b: Sequence[int], servers: Sequence[str], same: bool
                 ) -> Iterator[tuple[int, int]]:
    """Pairs (i < j) of tools on different servers, one from `a` and one from `b` (`a` itself)."""
    for x, i in enumerate(a):
        for j in (a[x + 1:] if same else b):
            if servers[i] != servers[j]:
                yield (i, j) if i < j else (j, i)


def _cross_count(a: Sequence[int], b: Sequence[int], servers: Sequence[str], same: bool) -> int:
    """len(list(_cross_pairs(...))), counted per server instead of enumerated."""
    in_a, in_b = Counter(servers[i] for i in a), Counter(servers[j] for j in b)
    if same:
        return (len(a) * (len(a) - 1) - sum(n * (n - 1) for n in in_a.values())) // 2
    return len(a) * len(b) - sum(n * in_b[s] for s, n in in_a.items())


def _unit_vectors(tools: Sequence[CatalogueTool]) -> list[dict[str, float]]:
    """Each description's TF-IDF vector (sublinear tf, IDF over `tools`), of norm 1 ({} if empty)."""
    analysed: dict[str, Counter[str]] = {}       # a description analysed once, however many tools carry it
    bags = [analysed.get(t.description) or analysed.setdefault(t.description, Counter(analyze(t.description)))
            for t in tools]
    n = len(tools)
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    vectors = []
    for bag in bags:
        weights = {term: (1.0 + math.log(tf)) * math.log(1.0 + n / df[term]) for term, tf in bag.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        vectors.append({term: w / norm for term, w in weights.items()} if norm else {})
    return vectors


def _prefix(vec: Mapping[str, float], postings: Mapping[str, Sequence[int]], threshold: float) -> list[str]:
    """`vec`'s rarest terms, up to where the remaining (commoner) ones weigh less than `threshold`."""
    ordered = sorted(vec, key=lambda term: (len(postings[term]), term))
    rest = sum(w * w for w in vec.values())
    limit = (threshold - 1e-9) ** 2 if threshold > 0 else -1.0
    prefix = []
    for term in ordered:
        if rest < limit:
            break
        prefix.append(term)
        rest -= vec[term] ** 2
    return prefix


def _dot(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    if len(b) < len(a):
        a, b = b, a
    return sum(w * b[term] for term, w in a.items() if term in b)
