"""What the CLI's tables and reports are made of, built without the CLI: rich tables and lines.

A report is a list of `Part`s, each a line of plain text (shown as is, never read as markup) or a
rich `Table` whose cells are markup (untrusted text through `cell`); the CLI prints them one
after another (`cli._common.show`). rich is imported inside functions only: the gateway imports
`presentation/` and never renders a table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from mcpctl.terminal import visible

if TYPE_CHECKING:
    from rich.table import Table

Part: TypeAlias = "str | Table"


def line(text: object) -> str:
    """Untrusted text as a line of a report: every control and bidi character a visible escape."""
    return visible(str(text))


def cell(text: object) -> str:
    """Untrusted text as a table cell (rich markup): `line`, with `[` escaped so `[red]` is text."""
    from rich.markup import escape

    return escape(visible(str(text)))

