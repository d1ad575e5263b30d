"""What a project presents, said once: `presents(spec)` (the mode, whether favourites are shown,
whether favourite-index sends its instruction). `ProjectSpec.from_resource` reads it from here, so
`get`, `describe`, `favourites list`, `doctor`, `surface`, validation and the gateway all give the
same answer (issue 32: `get` and `describe` once read `spec.presentation` with a default of flat).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def effective_presentation(presentation: str | None, favourites_enabled: bool | None) -> str:
    """The presentation a project gets: `presentation` when set, else favourite-index when the
    favourite index is enabled, else flat."""
    if presentation:
        return presentation
    return "favourite-index" if favourites_enabled else "flat"


@dataclass(frozen=True)
class Presents:
    """What a project presents: its mode, whether favourites are shown, and whether the
    favourite-index's "PREFER favourite ..." instruction is sent."""

    mode: str                   # flat | favourite-index | deferred
    favourites: bool            # the mode shows the pinned favourites (every mode but flat)
    instruction: bool           # favourite-index sends its PREFER instruction


def presents(spec: Mapping[str, Any] | None) -> Presents:
    """What a project with this `spec` presents: the one answer `get`, `describe`, `favourites list`,
    `doctor`, `surface` and the gateway give (`ProjectSpec.from_resource` reads it from here).
    `spec.presentation` when set, else favourite-index when `favouriteIndex.enabled` is true, else flat."""
    s = spec or {}
    fav = s.get("favouriteIndex") or {}
    mode = effective_presentation(s.get("presentation"), fav.get("enabled"))
    return Presents(mode, mode != "flat", mode == "favourite-index" and fav.get("instruction") is not False)
