"""A bar beside a row of numbers: which server costs most, which tools carry the work, at a glance.

`bar(value, top)` is plain text (full blocks, then an eighth block for the remainder), as long as
`value` is to `top` over `WIDTH` characters, so piped output and the docs carry the same bar a
terminal shows; `column(table)` adds the column that holds it, coloured by rich on a terminal only.
A non-zero value always gets at least an eighth, so a small one is not mistaken for none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from rich.table import Table

WIDTH: Final = 20
_EIGHTHS: Final = ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")


def bar(value: float, top: float, width: int = WIDTH) -> str:
    """`value` of `top` as a bar of `width` characters at most ('' for nothing)."""
    if value <= 0 or top <= 0:
        return ""
    eighths = max(1, round(min(value / top, 1.0) * width * 8))
    full, part = divmod(eighths, 8)
    return "█" * full + _EIGHTHS[part]


def column(table: Table) -> None:
    """Add the (headerless) bar column to `table`."""
    table.add_column("", style="cyan", no_wrap=True, overflow="ignore")
