"""The semantic path: MiniLM sentence embeddings fused with BM25F (the `hybrid` ranker).

Fully offline: the model and the vectors kept on disk and in memory are `vectors.py`'s. Tool
vectors are computed where the catalogue is listed (`warm`: the CLI's listings, the gateway's),
not at the first search; what is embedded for a tool, its server and its learned queries is said
here (`tool_text`, `server_text`, `index_texts`).

Fusion (chosen on the dev portions, docs/ranking.md): min-max normalise the BM25F scores and the
semantic scores over the catalogue and rank by LEXICAL_WEIGHT * lex + (1 - LEXICAL_WEIGHT) * sem,
where sem is the cosine of the query with the tool's text plus ABOUT_WEIGHT times its cosine with
what the tool's server says about itself (title, instructions; when it says anything), pulled
plus LEARNED_PROTO times its cosine with the mean of the tool's learned queries; The intent stage then
weighs the fused score (`intent.IntentStage`), and LEARNED_NEAR times the cube of the closest
learned query's cosine, times the best staged score, is added (the cube: only a request close to
one people asked counts; after the stage, as `lexical.LexicalRanker` adds its closeness). Importing this module fails without numpy; `rank.build_ranker` turns that into a logged
fallback to bm25.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Sequence
from typing import Final

# One BLAS thread unless the user says otherwise (vectors.py says why): set before numpy is first
# imported, which may be here.
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from mcpctl.catalogue.bm25 import schema_fields
from mcpctl.catalogue.intent import Intent
from mcpctl.catalogue.lexical import Explanation, LexicalRanker, ToolDoc
from mcpctl.catalogue.minilm import MiniLM
from mcpctl.catalogue.vectors import (
    EMBED_CHUNK,
    MODEL_NAME,
    MODEL_PACKAGES,
    QUERY_CACHE_SIZE,
    VectorCache,
    computing_elsewhere,
    embed_texts,
    find_model_dir,
    load_model,
    model_key,
    model_ready,
    query_vectors,
    uncached,
)

__all__ = ["EMBED_CHUNK", "MODEL_NAME", "MODEL_PACKAGES", "QUERY_CACHE_SIZE", "HybridRanker", "MiniLM", "VectorCache",
           "build", "computing_elsewhere", "embed_texts", "embed_tools", "find_model_dir", "index_texts", "load_model", "model_key",
           "pending", "query_vectors", "readable", "server_text", "tool_text", "uncached", "warm"]

log = logging.getLogger(__name__)

LEXICAL_WEIGHT: Final = 0.3
ABOUT_WEIGHT: Final = 0.15
# What learned queries add (chosen on the dev portions, docs/ranking.md): the cosine of the request
# with the mean of a tool's learned queries, to its semantic score; the cube of its closest learned
# query's cosine, to its fused score.
LEARNED_PROTO: Final = 0.5
LEARNED_NEAR: Final = 1.0
# With wait=False and the tool vectors still being computed, a query the lexical pass finds
# nothing for waits this long for them rather than answer nothing.
DEAD_END_WAIT_S: Final = 20.0
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_JOINERS: Final = re.compile(r"[_\-./]+")


def readable(identifier: str) -> str:
    """An identifier as words: `getHTTPResponse` -> `get HTTP Response`, `list_dir` -> `list dir`
    (the model's uncased WordPiece would read `gethttpresponse` as one odd word)."""
    return _JOINERS.sub(" ", _CAMEL.sub(" ", identifier)).strip() or identifier


def tool_text(doc: ToolDoc, with_server: bool = True) -> str:
    """What is embedded for a tool: its name as words, its server (left out when every tool of
    the catalogue has the same one: a word all tools share only blurs them), its description,
    and its parameters' names and descriptions."""
    where = f" ({doc.server})" if with_server else ""
    text = f"{readable(doc.name)}{where}: {doc.description}"
    props = doc.input_schema.get("properties") if isinstance(doc.input_schema, dict) else None
    if not isinstance(props, dict) or not props:
        return text
    text += f" Parameters: {', '.join(str(p) for p in props)}."
    descriptions = schema_fields(doc.input_schema)[1]
    return f"{text} {descriptions}" if descriptions else text


def embed_tools(model: MiniLM, model_key: str, docs: Sequence[ToolDoc],
                cache: VectorCache | None = None, *, compute: bool = True) -> np.ndarray | None:
    """One normalised vector per doc (its `tool_text`), from the disk cache where possible."""
    return embed_texts(model, model_key, [tool_text(d) for d in docs], cache, compute=compute)


def server_text(doc: ToolDoc) -> str:
    """What is embedded for a tool's server: its name, and what it says about itself
    (`ToolDoc.server_about`: its name, title, description and the first sentence of its
    instructions)."""
    return f"{doc.server}: {doc.server_about}" if doc.server_about else doc.server


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


class HybridRanker:
    """BM25F fused with MiniLM cosine similarity; `lexical_weight=0` ranks by embeddings alone.

    The semantic score of a tool is its cosine with the query plus `about_weight` times the
    cosine of its server's text (`server_text`) with the query, for servers that say anything
    about themselves (an `about` section). With `wait=False`, vectors
    missing from the cache are computed in a background thread and the ranker answers with
    BM25F alone until that is done (`ready`), so a large new catalogue never makes a search
    wait for the model, except a query BM25F finds nothing for: that one waits for the
    vectors (at most DEAD_END_WAIT_S) rather than answer nothing.
    """

    kind: str = "hybrid"

    def __init__(self, docs: Sequence[ToolDoc], lexical: LexicalRanker | None = None,
                 lexical_weight: float = LEXICAL_WEIGHT, cache: VectorCache | None = None,
                 *, wait: bool = True, about_weight: float = ABOUT_WEIGHT) -> None:
        # The model is mapped at the first query or the first text to embed, not here: a gateway
        # whose tools' vectors are cached and that is never asked to search never maps it. It is
        # loaded now only when its packed weights are not there yet (packing checks the model).
        self.model_key = model_key()
        self._model: MiniLM | None = None if model_ready(self.model_key) else load_model()[0]
        self.fallback: str | None = None
        self.docs = list(docs)
        self.ids = [d.id for d in docs]
        self.lexical = lexical or LexicalRanker(docs)
        self.lexical_weight = lexical_weight
        self.about_weight = about_weight
        self._cache = cache
        texts, abouts, learned = index_texts(docs, about_weight)
        # One vector per server that says something about itself; tools of the others get 0.
        where = {text: i for i, text in enumerate(abouts)}
        self._server_of = np.array([where[server_text(d)] if d.server_about else len(abouts) for d in docs],
                                   dtype=np.int64)
        self._n_about = len(abouts) if about_weight else 0
        # Learned queries: one row per (tool, query); a query shared by tools has a row for each.
        rows = {text: i for i, text in enumerate(learned)}
        pairs = [(t, rows[q]) for t, d in enumerate(docs) for q in d.learned if q in rows]
        self._learned_owner = np.array([t for t, _ in pairs], dtype=np.int64)
        self._learned_row = np.array([r for _, r in pairs], dtype=np.int64)
        self.about_vectors: np.ndarray | None = None
        self.learned_vectors: np.ndarray | None = None      # one row per (tool, learned query)
        self._prototypes: np.ndarray | None = None          # per learned tool: its queries' mean
        self._learned_tools = np.zeros(0, dtype=np.int64)
        self._learned_starts = np.zeros(0, dtype=np.int64)
        self._unlearned: HybridRanker | None = None
        self._done = threading.Event()
        self._stop = threading.Event()
        self.vectors: np.ndarray | None = None
        self.pending = 0              # texts still to embed when built (wait=False)
        found = embed_texts(self._model, self.model_key, texts, cache, compute=wait)
        if found is not None:
            self._adopt(found)
            self._done.set()
            return
        self.pending = uncached(self.model_key, texts, cache)

        def work() -> None:
            try:
                self._adopt(embed_texts(self._model, self.model_key, texts, cache, stop=self._stop))
            except Exception as e:   # stay lexical rather than break search
                log.warning("embedding %d tools failed; searching with bm25 only (%s: %s)",
                            len(docs), type(e).__name__, e)
            finally:
                self._done.set()

        threading.Thread(target=work, name="mcpctl-embed-tools", daemon=True).start()

    def _adopt(self, matrix: np.ndarray | None) -> None:
        if matrix is None:
            return
        n = len(self.ids)
        self.about_vectors = matrix[n:n + self._n_about] if self.about_weight else None
        learned = matrix[n + self._n_about:]
        if len(self._learned_row):
            rows = learned[self._learned_row]
            proto = np.zeros((len(self.ids), rows.shape[1]), dtype=np.float32)
            np.add.at(proto, self._learned_owner, rows)
            self._learned_tools = np.unique(self._learned_owner)
            # a tool's rows are together (built tool by tool): where each tool's rows start
            owner = self._learned_owner
            self._learned_starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            kept = proto[self._learned_tools]
            self._prototypes = kept / np.maximum(np.linalg.norm(kept, axis=1, keepdims=True), 1e-12)
            self.learned_vectors = rows
        self.vectors = matrix[:n]     # last: it is what `ready` checks

    def close(self) -> None:
        """No longer needed (the gateway stopping, or a newer index replacing this one): a
        background embedding stops after its current chunk, keeping what it computed in the
        cache. Searches still answer, lexically if the vectors were not ready (at once: a search
        BM25F finds nothing for no longer waits for them)."""
        self._stop.set()

    @property
    def ready(self) -> bool:
        """True once tool vectors are in use (False while embedding, or if that failed)."""
        return self.vectors is not None

    @property
    def warming(self) -> bool:
        """True while tool vectors are being computed in the background."""
        return not self._done.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        self._done.wait(timeout)
        return self.ready

    @property
    def model(self) -> MiniLM:
        """The encoder (mapped now if this process has not yet)."""
        if self._model is None:
            self._model = load_model()[0]
        return self._model

    def _query_vector(self, query: str) -> np.ndarray:
        return query_vectors.get(self.model, self.model_key, query)

    def semantic_scores(self, query: str, vectors: np.ndarray) -> np.ndarray:
        q = self._query_vector(query)
        cos: np.ndarray = vectors @ q
        about = self.about_vectors
        if self.about_weight and about is not None and len(about):
            cos = cos + self.about_weight * np.append(about @ q, np.float32(0.0))[self._server_of]
        if self._prototypes is not None:
            cos = cos.copy()
            cos[self._learned_tools] += LEARNED_PROTO * (self._prototypes @ q)
        return cos

    def near_learned(self, query: str) -> np.ndarray | None:
        """Each tool's closest learned query's cosine with the request, cubed (0 without one)."""
        learned = self.learned_vectors
        if learned is None:
            return None
        near = np.zeros(len(self.ids), dtype=np.float32)
        closest = np.maximum.reduceat(learned @ self._query_vector(query), self._learned_starts)
        near[self._learned_tools] = np.maximum(closest, 0.0)
        out: np.ndarray = near ** 3
        return out

    def fused(self, intent: Intent, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(BM25F scores of the ranked text over every tool, the fused score before the stage)."""
        fused = (1.0 - self.lexical_weight) * _minmax(self.semantic_scores(intent.text, vectors))
        lex = np.zeros(len(self.ids), dtype=np.float32)
        found = self.lexical.index.scores(intent.text)
        if found:
            lex[np.fromiter(found.keys(), np.int64, len(found))] = np.fromiter(found.values(), np.float32, len(found))
        if self.lexical_weight > 0:
            fused += self.lexical_weight * _minmax(lex)
        return lex, fused

    def scores(self, query: str, vectors: np.ndarray) -> np.ndarray:
        """Every tool's score for `query`: fused, weighed by the intent stage, plus what being
        close to a learned query gives (after the stage, scaled by the best staged score, as the
        lexical ranker does: a request people asked before, and followed by a call of the tool,
        is not halved again by the action it seems to ask for)."""
        intent = self.lexical.intent(query)
        staged = np.asarray(self.lexical.stage.apply_array(self.fused(intent, vectors)[1], intent))
        near = self.near_learned(intent.text)
        if near is not None and len(staged):
            staged = staged + LEARNED_NEAR * near * max(float(staged.max()), 0.0)
        return staged

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        return self.search_with(query, top_k)[0]

    def search_with(self, query: str, top_k: int) -> tuple[list[tuple[str, float]], bool]:
        """The hits and whether they are the fused ranking (False: BM25F alone, the vectors
        not being ready)."""
        vectors = self.vectors
        if vectors is None:
            hits = self.lexical.search(query, top_k)
            # closed: its embedding stops (or waits on another process's, the vectors' lock held)
            if hits or top_k <= 0 or self._done.is_set() or self._stop.is_set() or not self.wait_ready(DEAD_END_WAIT_S):
                return hits, False
            vectors = self.vectors
            assert vectors is not None
        n = len(self.ids)
        if top_k <= 0 or n == 0:
            return [], True
        s = self.scores(query, vectors)
        k = min(top_k, n)
        candidates = np.argpartition(-s, k - 1)[:k] if k < n else np.arange(n)
        top: list[int] = sorted(candidates.tolist(), key=lambda i: (-s[i], i))
        return [(self.ids[i], float(s[i])) for i in top], True

    def unlearned(self) -> HybridRanker:
        """The same ranker over the same tools, without what was learned (for `explain`; the
        vectors come from the cache)."""
        if not self.lexical.learns:
            return self
        if self._unlearned is None:
            docs = [d.unlearned() for d in self.docs]
            self._unlearned = HybridRanker(docs, self.lexical.unlearned(), self.lexical_weight, self._cache,
                                           about_weight=self.about_weight)
        return self._unlearned

    def explain(self, query: str, top_k: int) -> list[Explanation]:
        """Where each result's score came from: BM25F, the semantic part, the stage's factor and
        what learned queries added. Lexical alone while the vectors are not ready."""
        vectors = self.vectors
        if vectors is None or not self.ids:
            return self.lexical.explain(query, top_k)
        intent = self.lexical.intent(query)
        lex, fused = self.fused(intent, vectors)
        cos = self.semantic_scores(intent.text, vectors)
        weighed = np.asarray(self.lexical.stage.apply_array(fused, intent))
        plain = self.unlearned().scores(query, vectors) if self.lexical.learns else weighed
        factors = self.lexical.stage.factors(intent)
        out = []
        for tool_id, score in self.search_with(query, top_k)[0]:
            i = self.lexical.index.position(tool_id)
            factor = factors[i] if factors else 1.0
            out.append(Explanation(tool_id, score, self.docs[i].effect.label(), factor, float(lex[i]), float(cos[i]),
                                   score - float(plain[i]), score < float(fused[i]) * factor * (1 - 1e-6)))
        return out


def index_texts(docs: Sequence[ToolDoc], about_weight: float = ABOUT_WEIGHT,
                with_server: bool | None = None) -> tuple[list[str], list[str], list[str]]:
    """(every text the hybrid ranker over `docs` embeds: the tools' texts, then the servers'
    about texts, then the distinct learned queries; those about texts; those learned queries).
    `with_server`: name the server in each tool's text (default: when the docs come from more than
    one server)."""
    if with_server is None:
        with_server = len({d.server for d in docs}) > 1
    abouts = list(dict.fromkeys(server_text(d) for d in docs if d.server_about))
    learned = list(dict.fromkeys(q for d in docs for q in d.learned))
    return [tool_text(d, with_server) for d in docs] + (abouts if about_weight else []) + learned, abouts, learned


def warm(docs: Sequence[ToolDoc], with_server: bool | None = None) -> int:
    """Compute and cache now the vectors a hybrid ranker over `docs` needs (what is listed is
    indexed where it is listed, so that a search finds its vectors ready); returns how many texts
    were embedded. Raises ImportError without the model."""
    texts = index_texts(docs, ABOUT_WEIGHT, with_server)[0]
    todo = uncached(model_key(), texts)     # all cached: the model is not even loaded
    if todo:
        model, key = load_model()
        embed_texts(model, key, texts)
    return todo


def pending(docs: Sequence[ToolDoc], with_server: bool | None = None) -> int:
    """How many texts a hybrid ranker over `docs` would still have to embed (without loading the
    model)."""
    return uncached(model_key(), index_texts(docs, ABOUT_WEIGHT, with_server)[0])


def build(docs: Sequence[ToolDoc], lexical: LexicalRanker, kind: str, *, wait: bool = True) -> HybridRanker:
    """The ranker for `auto` (when the model loads), `semantic` and `hybrid`: all three are the
    fused ranker (embeddings alone lose to BM25F on two of the three evaluation sets; see
    docs/ranking.md)."""
    return HybridRanker(docs, lexical, wait=wait)
