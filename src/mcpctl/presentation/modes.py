"""The presentation stage of the pipeline (`presentation.view`): which slots a tool takes (no `mcp`).

A presentation mode (the project's `presentation`) arranges the tools the filters let through:
which slot kinds they take (`favourite`, `all`, `flat`), in what order around the built-ins, and
whether a slot is listed or only reachable by name (`search_tools`, `call_tool`). Each mode also
writes its part of the server instructions. `PRESENTATIONS` picks one from the project spec; the
names stage (`view.NameTable`) names the slot kinds it asks for.

- `flat` (`FlatPresentation`): every visible tool under its flat name, after the built-ins.
- `favourite-index` (`FavouriteIndexPresentation`): the favourites first, in pinned order, then
  every visible tool under `all` (a listed favourite's `all` entry is a pointer to it).
- `deferred` (`DeferredPresentation`): only the favourites are listed; the rest is reachable
  through `search_tools` and `call_tool` under its `all` name.

`favouriteIndex.instruction: false` keeps favourite-index's listing and drops its load-bearing
"PREFER favourite ..." text (`FavouriteIndexWithoutInstruction`, via `presentation_for`): what
`mcpctl bakeoff` measures as `favourite-index-without-instruction`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from mcpctl.presentation import names as nm

if TYPE_CHECKING:
    from mcpctl.catalogue.tool import CatalogueTool

FLAT: Final = "flat"
FAVOURITE_INDEX: Final = "favourite-index"
DEFERRED: Final = "deferred"


@dataclass(frozen=True, slots=True)
class Slot:
    kind: str                       # names.FAVOURITE | names.ALL | FLAT
    tool: CatalogueTool
    listed: bool = True             # False: reachable by name (search, call_tool), not listed
    pointer: bool = False           # listed as a pointer to the tool's favourite entry


class Presentation(Protocol):
    mode: str
    slot_kinds: tuple[str, ...]     # the slot kinds the names stage must name

    def arrange(self, visible: Sequence[CatalogueTool], favourites: Sequence[CatalogueTool]
                ) -> tuple[list[Slot], list[Slot]]:
        """(slots listed before the built-ins, slots after them)."""
        ...

    def instructions(self, namer: nm.Namer, favourite_names: Sequence[str], search: bool) -> str: ...


class FlatPresentation:
    mode: str = FLAT
    slot_kinds: tuple[str, ...] = (FLAT,)

    def arrange(self, visible: Sequence[CatalogueTool], favourites: Sequence[CatalogueTool]
                ) -> tuple[list[Slot], list[Slot]]:
        return [], [Slot(FLAT, t) for t in visible]

    def instructions(self, namer: nm.Namer, favourite_names: Sequence[str], search: bool) -> str:
        text = f"Tools are named {namer.pattern(FLAT)}."
        if search:
            text += (" When no listed tool obviously fits, call search_tools with a short description of the "
                     "task and then call the tool it returns.")
        return text


class FavouriteIndexPresentation:
    """Favourites first (pinned order), then every visible tool under `all`."""

    mode: str = FAVOURITE_INDEX
    slot_kinds: tuple[str, ...] = (nm.FAVOURITE, nm.ALL)

    def arrange(self, visible: Sequence[CatalogueTool], favourites: Sequence[CatalogueTool]
                ) -> tuple[list[Slot], list[Slot]]:
        # A favourite is in full once, under its favourite name; its `all` entry keeps the
        # catalogue complete as a short pointer to that name (still callable by either).
        pinned = {t.canonical_id for t in favourites}
        return ([Slot(nm.FAVOURITE, t) for t in favourites],
                [Slot(nm.ALL, t, pointer=t.canonical_id in pinned) for t in visible])

    def instructions(self, namer: nm.Namer, favourite_names: Sequence[str], search: bool) -> str:
        fav, rest = namer.pattern(nm.FAVOURITE), namer.pattern(nm.ALL)
        text = f"PREFER {fav} when one fits; use {rest} only if nothing in favourites fits."
        if favourite_names:
            text += f" Favourites: {', '.join(favourite_names)}."
        if search:
            text += (f" When neither a favourite nor an obvious {rest} tool fits, call search_tools with a short "
                     "description of the task and call the tool it returns.")
        return text


class FavouriteIndexWithoutInstruction(FavouriteIndexPresentation):
    """favourite-index's listing with neutral instructions: the names' pattern and the search hint
    flat gives, no preference for favourites and no list of them."""

    def instructions(self, namer: nm.Namer, favourite_names: Sequence[str], search: bool) -> str:
        text = f"Tools are named {namer.pattern(nm.FAVOURITE)} and {namer.pattern(nm.ALL)}."
        if search:
            text += (" When no listed tool obviously fits, call search_tools with a short description of the "
                     "task and then call the tool it returns.")
        return text


class DeferredPresentation:
    """Only the favourites are listed; every other visible tool is reachable through
    `search_tools` and `call_tool` under its `all` name."""

    mode: str = DEFERRED
    slot_kinds: tuple[str, ...] = (nm.FAVOURITE, nm.ALL)

    def arrange(self, visible: Sequence[CatalogueTool], favourites: Sequence[CatalogueTool]
                ) -> tuple[list[Slot], list[Slot]]:
        return [Slot(nm.FAVOURITE, t) for t in favourites], [Slot(nm.ALL, t, listed=False) for t in visible]

    def instructions(self, namer: nm.Namer, favourite_names: Sequence[str], search: bool) -> str:
        listed = f" ({', '.join(favourite_names)})" if favourite_names else ""
        return (f"Your tool list holds only this project's favourites{listed}; PREFER them when one fits. "
                "Before calling anything else, call search_tools with a short description of the task, then "
                "call the tool it returns with call_tool(name, arguments).")


PRESENTATIONS: Final[Mapping[str, Presentation]] = {
    FLAT: FlatPresentation(), FAVOURITE_INDEX: FavouriteIndexPresentation(), DEFERRED: DeferredPresentation()}

WITHOUT_INSTRUCTION: Final[Presentation] = FavouriteIndexWithoutInstruction()


def presentation_for(mode: str, *, instruction: bool = True) -> Presentation:
    """The presentation of a project: its mode, favourite-index without its instruction when asked."""
    if mode == FAVOURITE_INDEX and not instruction:
        return WITHOUT_INSTRUCTION
    return PRESENTATIONS[mode]


__all__ = [
    "DEFERRED",
    "FAVOURITE_INDEX",
    "FLAT",
    "PRESENTATIONS",
    "DeferredPresentation",
    "FavouriteIndexPresentation",
    "FavouriteIndexWithoutInstruction",
    "FlatPresentation",
    "Presentation",
    "Slot",
    "presentation_for",
]
