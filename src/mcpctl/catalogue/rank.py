"""Ranking the catalogue for an intent: the `Ranker` protocol and `build_ranker`.

The default ranker is lexical (BM25F over server, name, description and parameters; pure
Python). `semantic` and `hybrid` fuse it with a small sentence-embedding model when the
`mcpctl[semantic]` extra is installed; without it, or when the model fails to load, they fall
back to the lexical ranker and say so once in the log, never as an error to the caller.
An index is built once per catalogue: build a new ranker when the catalogue changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from mcpctl.catalogue.bm25 import BM25FIndex, BM25FParams, schema_fields

log = logging.getLogger(__name__)

RANKER_KINDS: Final = ("bm25", "semantic", "hybrid")


@dataclass(frozen=True)
class ToolDoc:
    """One upstream tool as the ranker sees it."""

    id: str               # canonical "server/tool"
    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, server: str, tool: Mapping[str, Any]) -> ToolDoc:
        """From a wire-format (camelCase) tool dict as listed by `server`."""
        name = str(tool.get("name", ""))
        schema = tool.get("inputSchema")
        return cls(
            id=f"{server}/{name}",
            server=server,
            name=name,
            description=str(tool.get("description") or ""),
            input_schema=schema if isinstance(schema, Mapping) else {},
        )


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
    }


class LexicalRanker:
    """BM25F over the tool's fields; the default ranker."""

    kind: Final = "bm25"

    def __init__(self, docs: Sequence[ToolDoc], params: BM25FParams | None = None) -> None:
        self.docs = list(docs)
        self.index = BM25FIndex([d.id for d in self.docs], [doc_fields(d) for d in self.docs], params)

    def __len__(self) -> int:
        return len(self.docs)

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        return self.index.search(query, top_k)


_warned: set[str] = set()


def _warn_once(key: str, message: str, *args: object) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(message, *args)


def build_ranker(docs: Sequence[ToolDoc], kind: str = "bm25", *, wait: bool = True) -> Ranker:
    """A ranker over `docs`. `kind` is bm25 | semantic | hybrid (the project's `search.ranker`).

    `semantic` and `hybrid` need the `mcpctl[semantic]` extra; without it, or if the model
    cannot be loaded, this logs one warning and returns the lexical ranker. Tool vectors come
    from an on-disk cache; with `wait=False` tools not cached yet are embedded in the
    background while the ranker answers lexically (for a server that must not stall).

    Raises:
        ValueError: `kind` is not one of RANKER_KINDS.
    """
    if kind not in RANKER_KINDS:
        raise ValueError(f"unknown ranker {kind!r}; expected one of: {', '.join(RANKER_KINDS)}")
    lexical = LexicalRanker(docs)
    if kind == "bm25":
        return lexical
    try:
        from mcpctl.catalogue import semantic  # the one sanctioned lazy import (numpy, model)

        return semantic.build(docs, lexical, kind, wait=wait)
    except ImportError as e:
        _warn_once("import", "search ranker %r needs the semantic extra (pip install 'mcpctl[semantic]'); "
                   "using bm25 instead (%s)", kind, e)
    except Exception as e:   # a broken model must never break search
        _warn_once("load", "search ranker %r could not load its model; using bm25 instead (%s: %s)",
                   kind, type(e).__name__, e)
    return lexical


def docs_from_catalogue(catalogue: Iterable[tuple[str, Iterable[Mapping[str, Any]]]]) -> list[ToolDoc]:
    """ToolDocs from (server, wire-format tool dicts) pairs."""
    return [ToolDoc.from_wire(server, tool) for server, tools in catalogue for tool in tools]
