"""The tools as a ranker sees them (`ToolDoc`), the `Ranker` protocol and the lexical ranker.

BM25F over server, name, description, parameters and the server's own title and instructions;
pure Python. `rank` chooses among rankers; `semantic` builds on these types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from mcpctl.catalogue.bm25 import BM25FIndex, BM25FParams, schema_fields


@dataclass(frozen=True)
class ToolDoc:
    """One upstream tool as the ranker sees it."""

    id: str               # canonical "server/tool"
    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    # The server's own title, description and instructions (its initialize/discover reply): the
    # same for every tool of that server, ranked as a low-weight field.
    server_about: str = ""

    @classmethod
    def from_wire(cls, server: str, tool: Mapping[str, Any], server_about: str = "") -> ToolDoc:
        """From a wire-format (camelCase) tool dict as listed by `server`."""
        name = str(tool.get("name", ""))
        schema = tool.get("inputSchema")
        return cls(
            id=f"{server}/{name}",
            server=server,
            name=name,
            description=str(tool.get("description") or ""),
            input_schema=schema if isinstance(schema, Mapping) else {},
            server_about=server_about,
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
        "server_about": doc.server_about,
    }


class LexicalRanker:
    """BM25F over the tool's fields; the default ranker."""

    kind: Final = "bm25"

    def __init__(self, docs: Sequence[ToolDoc], params: BM25FParams | None = None) -> None:
        self.fallback: str | None = None     # why a semantic ranker was asked for and this came
        self.docs = list(docs)
        self.index = BM25FIndex([d.id for d in self.docs], [doc_fields(d) for d in self.docs], params)

    def __len__(self) -> int:
        return len(self.docs)

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        return self.index.search(query, top_k)


def docs_from_catalogue(catalogue: Iterable[tuple[str, Iterable[Mapping[str, Any]]]],
                        about: Mapping[str, str] | None = None) -> list[ToolDoc]:
    """ToolDocs from (server, wire-format tool dicts) pairs; `about`: server -> its about text."""
    about = about or {}
    return [ToolDoc.from_wire(server, tool, about.get(server, "")) for server, tools in catalogue for tool in tools]
