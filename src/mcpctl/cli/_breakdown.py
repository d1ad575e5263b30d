"""Usage broken down by a column of the invocation log (the token's name, the gateway host, ...):
the one seam behind `logs --by`, `favourites suggest --by` and `surface --by`.

Each reads `breakdown()` of the log in effect (SQLite, or the team's PostgreSQL: the same answer),
for one project and window, and shows every value's calls, its share of the window's calls,
errors and last call: a table (`presentation.log_tables`); the JSON list and the markdown rows are `audit.formats`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

from ._common import out, show

if TYPE_CHECKING:
    from mcpctl.audit.records import Breakdown


def by_option_help(what: str) -> str:
    from mcpctl.audit.records import BREAKDOWNS

    return f"{what} per {'|'.join(BREAKDOWNS)}: calls, share of the calls, errors, last call."


def check_by(by: str | None) -> str | None:
    """`by` if it names a column the log breaks down by (credential, host, ...), else a clear
    error naming `--by` and the choices."""
    from mcpctl.audit.records import BREAKDOWNS

    if by is not None and by not in BREAKDOWNS:
        raise typer.BadParameter(f"{by!r} is not one of: {', '.join(BREAKDOWNS)}", param_hint="'--by'")
    return by


def usage_by(by: str, *, project: str | None, since: float | None, until: float | None = None) -> list[Breakdown]:
    """The calls in [since, until) of `project` (every project: None) per value of `by`, most first."""
    from ._common import invocation_log

    with invocation_log() as log:
        return list(log.breakdown(by, project=project, since=since, until=until))


def render(by: str, rows: Sequence[Breakdown]) -> None:
    """A table: the value, CALLS, SHARE, ERRORS, LAST CALL (local time)."""
    from mcpctl.presentation.log_tables import breakdown_table

    out.print(breakdown_table(by, rows))


def render_section(by: str, rows: Sequence[Breakdown], period: str) -> None:
    """`render` under a headline (the section `favourites suggest` and `surface` print with --by)."""
    from mcpctl.presentation.log_tables import breakdown_section

    show(breakdown_section(by, rows, period))
