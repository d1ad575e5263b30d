"""A project's current catalogue, as the ranker sees it: cached listings minus curation.

Reads the on-disk catalogue cache (the gateway's last listing of each server), keeps the tools
the project enables, and turns them into `ToolDoc`s. Starts nothing and imports no `mcp`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcpctl.catalogue import cache, curation
from mcpctl.catalogue.rank import ToolDoc


class _ProjectLike(Protocol):
    @property
    def servers(self) -> tuple[str, ...]: ...

    @property
    def disabled(self) -> tuple[str, ...]: ...

    @property
    def enabled(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ProjectCatalogue:
    docs: list[ToolDoc]
    wire: dict[str, dict[str, Any]]   # canonical id -> the wire-format tool dict
    unlisted: list[str]               # servers never listed yet (no cache entry)


def project_catalogue(spec: _ProjectLike) -> ProjectCatalogue:
    """The enabled tools of every server of the project, from the catalogue cache."""
    docs: list[ToolDoc] = []
    wire: dict[str, dict[str, Any]] = {}
    unlisted: list[str] = []
    for server in spec.servers:
        tools: Sequence[dict[str, Any]] | None = cache.read_server_tools(server)
        if tools is None:
            unlisted.append(server)
            continue
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            doc = ToolDoc.from_wire(server, tool)
            if doc.id in wire or not curation.is_enabled(doc.id, spec):
                continue
            docs.append(doc)
            wire[doc.id] = tool
    return ProjectCatalogue(docs, wire, unlisted)
