"""Changing one stored object in place: the seam behind `tools enable|disable`, `favourites
add|remove` and `favourites suggest --apply`.

The change runs on a copy of the stored spec under the store's lock; the result is validated
exactly as `apply` validates a manifest (field checks and the cross-field rules), so a verb that
edits a project can never store what `apply` would refuse. Nothing is written when the change
is a no-op or invalid. `where` names the command for error messages.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpctl.resources.apply import KnownTools, check_overrides
from mcpctl.resources.kinds import API_VERSION
from mcpctl.resources.store import ResourceStore
from mcpctl.resources.validate import resource_from, user_view, validate_document
from mcpctl.resources.yamlio import Document


@dataclass
class Edit:
    kind: str
    name: str
    changed: bool
    before: dict[str, Any]                 # the stored object
    after: dict[str, Any]                  # what is stored now (== before when unchanged)
    warnings: list[str] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.kind.lower()}/{self.name}"


def edit_spec(store: ResourceStore, kind: str, name: str, change: Callable[[dict[str, Any]], Any], *,
              where: str | None = None, dry_run: bool = False, known_tools: KnownTools | None = None) -> Edit:
    """Apply `change` (which edits a spec dict in place) to the stored object `kind/name`; with
    `known_tools`, a project's changed `tools.overrides` are checked against their tools as `apply`
    checks them."""
    with store.locked():
        live = store.get(kind, name)
        spec = copy.deepcopy(live.get("spec") or {})
        change(spec)
        meta = {k: v for k, v in (live.get("metadata") or {}).items() if k in ("name", "labels", "annotations")}
        doc = Document(source=where or f"{kind.lower()}/{name}", index=1,
                       data={"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec})
        v = validate_document(doc)
        if known_tools is not None and kind == "Project":
            v.warnings += check_overrides(v, live, known_tools)
        if user_view(live) == (v.metadata, v.spec):
            return Edit(kind, name, False, live, live, v.warnings)
        new = resource_from(v, live)
        if not dry_run:
            store.put(new)
        return Edit(kind, name, True, live, new, v.warnings)
