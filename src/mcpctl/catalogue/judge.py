"""Judging tools one by one and in pairs: what a tool can do beyond reading, and which tools a
model cannot tell apart (no I/O, no `mcp`). Used by `mcpctl surface`.

- `reach(tool)`: write, delete or send outward, from the upstream's annotations where given,
  else a labelled heuristic (the verb a name leads with, else its description's first word);
- `collisions(tools)`: upstream tool names several servers list;
- `near_duplicates(tools)`: cross-server pairs whose descriptions are nearly the same.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from mcpctl.catalogue.analyze import analyze

if TYPE_CHECKING:
    from mcpctl.gateway.view import CatalogueTool

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

# Verbs as tool names use them; a name's first part found here decides (get_posts reads, even though
# "post" sends), else the description's first words do. Stemmed like the catalogue's analyzer.
_VERBS: Final = {
    DELETE: "delete remove drop destroy purge erase truncate kill terminate revoke unlink rm del wipe clear "
            "reset uninstall discard prune evict",
    SEND: "send post publish email mail notify message tweet reply comment share upload push broadcast invite "
          "sms forward submit dm",
    WRITE: "write create update edit set put patch modify insert add save move rename copy append exec execute "
           "run start stop restart deploy install merge commit close assign apply change fork transfer pay book "
           "order approve archive mkdir replace enable disable import schedule trigger launch toggle download "
           "store register lock unlock grant configure init initialize mark star follow subscribe unsubscribe "
           "sync upsert overwrite attach detach interact customize customise",
    READ: "get list read search find fetch query describe show view lookup look count check validate calculate "
            "compute convert analyze analyse summarize summarise explain parse render preview inspect browse "
            "retrieve scan stat status info explore resolve compare diff translate estimate detect extract "
            "identify recommend suggest generate echo ping test evaluate measure hash encode decode",
}


def _stemmed(words: str) -> frozenset[str]:
    return frozenset(t for w in words.split() for t in analyze(w, stop=False))


_LEXICON: Final = {kind: _stemmed(words) for kind, words in _VERBS.items()}
_FILLER: Final = frozenset({"tool", "function", "api", "mcp", "server"})
_CAMEL_RE: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_RE: Final = re.compile(r"[a-z]+")


def _verb(words: Iterable[str]) -> tuple[str, str] | None:
    """(kind, word) of the first word that is a known verb."""
    for word in words:
        stems = analyze(word, stop=False)
        for kind in (DELETE, SEND, WRITE, READ):
            if stems and stems[0] in _LEXICON[kind]:
                return kind, word
    return None


def _name_verb(name: str) -> tuple[str, str] | None:
    """The verb a tool name leads with: its first word, else its second (`force_terminate`); a
    verb after `and`/`or` counts too, and the strongest wins (`search_and_replace` writes)."""
    words = _WORD_RE.findall(_CAMEL_RE.sub(" ", name).lower())
    lead = _verb(words[:1]) or _verb(words[1:2])
    found = [lead] if lead else []
    found += [v for i, w in enumerate(words[:-1]) if w in ("and", "or") and (v := _verb(words[i + 1:i + 2]))]
    order = (DELETE, SEND, WRITE, READ)
    return min(found, key=lambda f: order.index(f[0])) if found else None


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
    found, where = _name_verb(tool.name), "name"
    if found is None:
        first = tool.description.split(". ", 1)[0].split("\n", 1)[0]
        words = [w for w in analyze(first, stem=False) if w not in _FILLER][:2]
        found, where = _verb(words if words[:1] and words[0].endswith("ly") else words[:1]), "description"
    if found is None:
        return Reach((), HEURISTIC, "no write, delete or send verb in the name or description")
    kind, word = found
    if kind == READ:
        return Reach((), HEURISTIC, f"{where}: read verb {word!r}")
    return Reach((WRITE, DELETE) if kind == DELETE else (kind,), HEURISTIC, f"{where}: {kind} verb {word!r}")


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
    """Cross-server pairs whose descriptions score at least `threshold` (cosine of TF-IDF vectors
    of the analysed descriptions, IDF over `tools`), best first. Sparse: only pairs sharing a
    term are scored, through an inverted index."""
    bags = [Counter(analyze(t.description)) for t in tools]
    n = len(tools)
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, bag in enumerate(bags):
        weights = {term: (1.0 + math.log(tf)) * math.log(1.0 + n / df[term]) for term, tf in bag.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        if norm == 0:
            continue
        for term, w in weights.items():
            postings[term].append((i, w / norm))
    servers = [t.server for t in tools]
    dots: dict[tuple[int, int], float] = defaultdict(float)
    for plist in postings.values():
        for a in range(len(plist)):
            i, wi = plist[a]
            for j, wj in plist[a + 1:]:
                if servers[i] != servers[j]:
                    dots[(i, j)] += wi * wj
    pairs = [NearDuplicate(tools[i].canonical_id, tools[j].canonical_id, round(min(score, 1.0), 3),
                           tools[i].name == tools[j].name, tools[i].description, tools[j].description)
             for (i, j), score in dots.items() if score >= threshold - 1e-9]
    return sorted(pairs, key=lambda p: (-p.score, p.a, p.b))
