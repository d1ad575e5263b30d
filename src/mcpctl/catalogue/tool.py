"""`CatalogueTool`: one upstream tool as its server listed it, the unit every layer above shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CatalogueTool:
    """One upstream tool, as its server listed it."""

    canonical_id: str
    server: str
    name: str                       # the upstream's own name
    wire: Mapping[str, Any]         # camelCase, exactly as listed: never mutated

    @property
    def description(self) -> str:
        return str(self.wire.get("description") or "")
