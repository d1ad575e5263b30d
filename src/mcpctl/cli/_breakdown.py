"""Usage broken down by a column of the invocation log (the token's name, the gateway host, ...):
the one seam behind `logs --by`, `favourites suggest --by` and `surface --by`.

Each reads `breakdown()` of the log in effect (SQLite, or the team's PostgreSQL: the same answer),
for one project and window, and shows every value's calls, its share of the window's calls,
errors and last call: a table, a JSON list, or markdown rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer

from ._common import out, safe

if TYPE_CHECKING:
    from mcpctl.audit.records import Breakdown

NONE_LABEL = "-"            # a call without a value: stdio, or the project's own token


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


def share(row: Breakdown, rows: Sequence[Breakdown]) -> float:
    total = sum(r.calls for r in rows)
    return row.calls / total if total else 0.0


def iso_utc(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def local_time(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 or x == 0 else "<1%"


def to_json(rows: Sequence[Breakdown]) -> list[dict[str, Any]]:
    """One object per value: key (null: none), calls, share (0-1, 4 places), errors, lastCall (UTC)."""
    return [{"key": r.key, "calls": r.calls, "share": round(share(r, rows), 4), "errors": r.errors,
             "lastCall": iso_utc(r.last_ts)} for r in rows]


def section_json(by: str, rows: Sequence[Breakdown]) -> dict[str, Any]:
    """The `by` object `favourites suggest -o json` and `surface -o json` carry with `--by`."""
    return {"column": by, "calls": sum(r.calls for r in rows), "rows": to_json(rows)}


def render(by: str, rows: Sequence[Breakdown]) -> None:
    """A table: the value, CALLS, SHARE, ERRORS, LAST CALL (local time)."""
    from rich.table import Table

    from . import _bars as bars

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in (by.upper(), "CALLS", "SHARE"):
        table.add_column(col, justify="left" if col == by.upper() else "right", no_wrap=True)
    bars.column(table)                                  # which value carries the calls, at a glance
    for col in ("ERRORS", "LAST CALL"):
        table.add_column(col, justify="left" if col == "LAST CALL" else "right", no_wrap=True)
    top = max((r.calls for r in rows), default=0)
    for r in rows:
        table.add_row(safe(r.key if r.key is not None else NONE_LABEL), str(r.calls), _pct(share(r, rows)),
                      bars.bar(r.calls, top), str(r.errors), local_time(r.last_ts))
    out.print(table)


def render_section(by: str, rows: Sequence[Breakdown], period: str) -> None:
    """`render` under a headline (the section `favourites suggest` and `surface` print with --by)."""
    total = sum(r.calls for r in rows)
    out.print(f"Calls by {by} {period}: {total} call(s), {len(rows)} value(s)", markup=False)
    if rows:
        render(by, rows)


def markdown(by: str, rows: Sequence[Breakdown], period: str) -> list[str]:
    """The same as markdown lines (`surface -o markdown`)."""
    lines = [f"**Calls by {by}** ({period}): {sum(r.calls for r in rows)} call(s)"]
    if rows:
        lines += ["", f"| {by} | calls | share | errors | last call (UTC) |", "|---|--:|--:|--:|---|"]
        lines += [f"| {(r.key or NONE_LABEL).replace('|', chr(92) + '|')} | {r.calls} | {_pct(share(r, rows))} | "
                  f"{r.errors} | {iso_utc(r.last_ts)} |" for r in rows]
    return lines
