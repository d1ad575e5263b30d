"""The passage index: every indexed resource's passages, ranked by the project's ranker (no `mcp`).

The gateway (`gateway.knowledge`) and the CLI (`mcpctl ask`) read resources and `put` their text
here; `search` ranks the passages of the servers a caller may draw on. The ranker is the one
`search_tools` uses (`catalogue.rank.build_ranker`; `auto` is hybrid where the MiniLM model is
installed), over one document per passage: the resource's title and the passage's heading as its
name, the passage's text as its description. It is rebuilt, once, after the passages change.

**Bounded in bytes.** The index holds at most `max_bytes` of text (UTF-8; the project's
`ask.maxBytes`, 4 MiB by default), first come first served in the servers' listing order: a
resource that does not fit is indexed up to what is left, then nothing more is until something
leaves. Text is the measure because everything else grows with it: passages (one per ≤ 800
characters), BM25F postings and one 384-float vector each (1.5 kB). Measured
(`benchmarks/bench_ask.py`): 10,000 passages are 6.3 MiB of text and +159 MB of resident memory
with BM25F alone, so the 4 MiB default is about 6,500 passages and ~100 MB (docs/ask.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from typing import Final

from mcpctl.ask.passages import Passage, passages_of
from mcpctl.catalogue.lexical import Ranker, ToolDoc
from mcpctl.resources.settings import DEFAULT_RANKER

MAX_TOP_K: Final = 20


@dataclass(frozen=True, slots=True)
class Hit:
    passage: Passage
    score: float


@dataclass(slots=True)
class _Resource:
    name: str
    passages: list[Passage]
    size: int                  # bytes of text indexed
    cut: bool                  # truncated to the byte budget


def passage_doc(p: Passage) -> ToolDoc:
    """What the ranker indexes for a passage."""
    name = f"{p.name} — {p.heading}" if p.heading and p.heading != p.name else p.name
    return ToolDoc(id=p.id, server=p.server, name=name, description=p.text)


RankerFactory = Callable[[Sequence[ToolDoc], str, bool], Ranker]


def _default_factory(docs: Sequence[ToolDoc], kind: str, wait: bool) -> Ranker:
    from mcpctl.catalogue.rank import build_ranker

    return build_ranker(docs, kind, wait=wait, intent=False)


class PassageIndex:
    """Resources' passages, keyed by (server, uri), bounded in bytes of text."""

    def __init__(self, ranker: str = DEFAULT_RANKER, max_bytes: int = 4 * 2**20, *, wait: bool = True,
                 factory: RankerFactory = _default_factory) -> None:
        """`wait=False` (the gateway): passages not embedded yet are embedded in the background
        while the ranker answers by keyword (`catalogue.semantic.HybridRanker`), so a large new
        index never makes an `ask` wait minutes for the model."""
        self.kind = ranker
        self.wait = wait
        self.max_bytes = max_bytes
        self._factory = factory
        self._resources: dict[tuple[str, str], _Resource] = {}
        self.size = 0
        self.version = 0
        self.skipped: dict[tuple[str, str], str] = {}     # (server, uri) -> why it is not indexed
        self._ranker: tuple[int, Ranker, dict[str, Passage]] | None = None
        self._lock = threading.Lock()                      # one ranker build at a time

    # -- contents ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return sum(len(r.passages) for r in self._resources.values())

    def resources(self) -> list[tuple[str, str]]:
        return list(self._resources)

    def has(self, server: str, uri: str) -> bool:
        return (server, uri) in self._resources

    def put(self, server: str, uri: str, name: str, text: str) -> bool:
        """Index (or re-index) one resource's text; whether anything changed."""
        old = self._resources.get((server, uri))
        data = text.encode("utf-8")
        room = self.max_bytes - self.size + (old.size if old else 0)
        cut = len(data) > room
        if cut:
            data = data[:max(room, 0)]
            text = data.decode("utf-8", "ignore")
            self.skipped[(server, uri)] = (f"cut to {len(data)} bytes: ask.maxBytes ({self.max_bytes}) is reached"
                                           if data else f"not indexed: ask.maxBytes ({self.max_bytes}) is reached")
        else:
            self.skipped.pop((server, uri), None)
        passages = passages_of(server, uri, name, text) if text else []
        if old is not None and old.passages == passages and old.name == name:
            return False
        if old is not None:
            self.size -= old.size
        self._resources[(server, uri)] = _Resource(name, passages, len(data), cut)
        self.size += len(data)
        self.version += 1
        return True

    def skip(self, server: str, uri: str, why: str) -> None:
        """A listed resource that has no text to index (binary, unreadable): said, not indexed."""
        self.drop(server, uri)
        self.skipped[(server, uri)] = why

    def drop(self, server: str, uri: str) -> bool:
        old = self._resources.pop((server, uri), None)
        self.skipped.pop((server, uri), None)
        if old is None:
            return False
        self.size -= old.size
        self.version += 1
        return True

    def keep_only(self, server: str, uris: Container[str]) -> bool:
        """Drop `server`'s resources it no longer lists."""
        gone = [k for k in self._resources if k[0] == server and k[1] not in uris]
        gone_skipped = [k for k in self.skipped if k[0] == server and k[1] not in uris]
        for k in gone_skipped:
            self.skipped.pop(k, None)
        return any([self.drop(*k) for k in gone])

    # -- ranking -----------------------------------------------------------------------------------

    def ranker(self) -> tuple[Ranker, dict[str, Passage]]:
        """The ranker for the current passages (built once per version; with `wait` and the
        model, embedding takes ~76 ms of CPU a passage: call it from a worker thread)."""
        with self._lock:
            built = self._ranker
            if built is not None and built[0] == self.version:
                return built[1], built[2]
            version = self.version
            passages = {p.id: p for r in list(self._resources.values()) for p in r.passages}
            ranker = self._factory([passage_doc(p) for p in passages.values()], self.kind, self.wait)
            self._ranker = (version, ranker, passages)
            return ranker, passages

    def describe(self) -> str:
        """Which ranker ranks the passages, for people: `hybrid (search.ranker: auto)`, or
        `bm25 (search.ranker: auto): why it fell back` (`rank.ranked_by`)."""
        from mcpctl.catalogue.rank import ranked_by

        return ranked_by(self.ranker()[0], self.kind)

    def search(self, question: str, top_k: int, servers: Container[str] | None = None) -> list[Hit]:
        """The best `top_k` passages for `question`, of `servers` only (None: all), best first."""
        ranker, passages = self.ranker()
        if not passages or top_k <= 0:
            return []
        hits: list[Hit] = []
        for pid, score in ranker.search(question, len(passages)):
            p = passages.get(pid)
            if p is None or (servers is not None and p.server not in servers):
                continue
            hits.append(Hit(p, score))
            if len(hits) >= top_k:
                break
        return hits
