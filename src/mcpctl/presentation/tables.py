"""What the CLI's tables and reports are made of, built without the CLI: rich tables and lines.

A report is a list of `Part`s, each a line of plain text (shown as is, never read as markup) or a
rich `Table` whose cells are markup (untrusted text through `cell`); the CLI prints them one
after another (`cli._common.show`). rich is imported inside functions only: the gateway imports
`presentation/` and never renders a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from mcpctl.terminal import visible

if TYPE_CHECKING:
    from rich.table import Table

Part: TypeAlias = "str | Table"

# The layout of `get`'s tables (`cli._tables`: why columns are kept whole or give way).
GAP: Final = 2                  # spaces between two columns
FREE_FLOOR: Final = 10          # a free-text column gives way down to this (or its header), then wraps


@dataclass(frozen=True)
class Column:
    header: str
    free: bool = False          # free text: narrowed and wrapped before anything else; else never cut
    justify: Literal["left", "right"] = "left"


def free(header: str) -> Column:
    return Column(header, free=True)


def layout(columns: Sequence[Column], natural: Sequence[int], width: int | None) -> list[int]:
    """Each column's width: `natural` (its widest cell) when it fits in `width` or `width` is None
    (piped); else the free-text columns are narrowed, the widest first, to no less than their floor."""
    total = sum(natural) + GAP * (len(natural) - 1)
    if width is None or total <= width:
        return list(natural)
    flexible = [i for i, c in enumerate(columns) if c.free]
    floors = {i: min(natural[i], max(FREE_FLOOR, len(columns[i].header))) for i in flexible}
    room = width - (total - sum(natural[i] for i in flexible))
    out = list(natural)
    if room <= sum(floors.values()):
        for i in flexible:
            out[i] = floors[i]
        return out
    # the largest cap that fits: each free column gets min(natural, max(floor, cap))
    lo, hi = 0, max(natural[i] for i in flexible)
    while lo < hi:
        cap = (lo + hi + 1) // 2
        if sum(min(natural[i], max(floors[i], cap)) for i in flexible) <= room:
            lo = cap
        else:
            hi = cap - 1
    for i in flexible:
        out[i] = min(natural[i], max(floors[i], lo))
    return out


def line(text: object) -> str:
    """Untrusted text as a line of a report: every control and bidi character a visible escape."""
    return visible(str(text))


def cell(text: object) -> str:
    """Untrusted text as a table cell (rich markup): `line`, with `[` escaped so `[red]` is text."""
    from rich.markup import escape

    return escape(visible(str(text)))

