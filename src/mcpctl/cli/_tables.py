"""Tables as kubectl prints them: columns that identify a row or say its state are never cut.

A column is either kept whole (NAME, STATE, TOOLS, SIGN-IN, AGE, PRESENTATION: what a reader looks
a row up by, and what it says) or free text (TARGET, LAST ERROR, DESCRIPTION). On a terminal too
narrow for the table, the free-text columns give way first, the widest first, each down to its
floor (its header, at least `FREE_FLOOR` characters), and their text wraps inside the column; the
kept columns never shrink, and when even the floors do not fit the lines are simply longer than
the terminal, which wraps them, as `kubectl get -o wide` does. Piped (stdout not a terminal),
nothing gives way: every column is as wide as its widest cell, whatever the length.

`presentation.tables.layout` is the arithmetic (no I/O); `print_table` measures, lays out and prints.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcpctl.presentation.tables import GAP, Column, layout

if TYPE_CHECKING:
    from rich.table import Table

def terminal_width() -> int | None:
    """The width of the terminal stdout is, or None when it is not one (piped: nothing is cut)."""
    from rich.console import Console

    console = Console(file=sys.stdout)
    return console.width if console.is_terminal else None


def build(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None) -> tuple[Table, int]:
    """The table laid out for `width` (None: piped), and the width it takes. Cells are rich markup
    (untrusted text already through `safe`)."""
    from rich.table import Table
    from rich.text import Text

    texts = [[Text.from_markup(cell) for cell in row] for row in rows]
    natural = [max([len(c.header)] + [row[i].cell_len for row in texts]) for i, c in enumerate(columns)]
    widths = layout(columns, natural, width)
    table = Table(box=None, pad_edge=False, header_style="bold", padding=(0, GAP // 2))
    for c, w in zip(columns, widths, strict=True):
        table.add_column(c.header, width=w, justify=c.justify, no_wrap=not c.free,
                         overflow="fold" if c.free else "ignore")
    for row in texts:
        table.add_row(*row)
    return table, sum(widths) + GAP * (len(widths) - 1)


def print_table(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    """Print a table on stdout: laid out for the terminal, or whole when piped."""
    from rich.console import Console

    table, used = build(columns, rows, terminal_width())
    Console(file=sys.stdout, width=max(used, 1), highlight=False).print(table)
