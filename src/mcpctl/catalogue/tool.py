"""`CatalogueTool`: one upstream tool as a project presents it, the unit every layer above shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.resources.overrides import ToolOverride


@dataclass(frozen=True, slots=True)
class CatalogueTool:
    """One upstream tool: `wire` is its definition as presented (its server's own, or as the
    project's `tools.overrides` reword it); `upstream` keeps the server's own when they differ,
    for what must read it (pins, poisoning flags, `surface`'s before)."""

    canonical_id: str
    server: str
    name: str                       # the upstream's own name: what a call is routed by
    wire: Mapping[str, Any]         # camelCase, as presented: never mutated
    upstream: Mapping[str, Any] | None = None    # the server's own definition, when overridden
    override: ToolOverride | None = None

    @property
    def description(self) -> str:
        return str(self.wire.get("description") or "")

    @property
    def own(self) -> Mapping[str, Any]:
        """The definition exactly as its server listed it."""
        return self.wire if self.upstream is None else self.upstream

    @property
    def label(self) -> str:
        """The tool's part of its presented names: its own name, or the override's."""
        name = self.wire.get("name") if self.upstream is not None else None
        return name if isinstance(name, str) and name else self.name
