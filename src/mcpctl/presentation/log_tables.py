"""The invocation log as the CLI's tables show it (`mcpctl logs`, `logs status|stats`, and the
calls per credential, host, ... that `logs --by`, `favourites suggest --by` and `surface --by`
print): rich tables built here (`presentation.tables`), printed by the CLI. The times and the
JSON and markdown forms are `audit.formats`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcpctl.audit import formats as fmt
from mcpctl.presentation import bars
from mcpctl.presentation.tables import Part, cell

if TYPE_CHECKING:
    from rich.console import JustifyMethod
    from rich.table import Table

    from mcpctl.audit.log import LogSummary, ToolStats
    from mcpctl.audit.records import Breakdown

_OUTCOME_STYLE = {"ok": "green", "tool_error": "yellow", "denied": "magenta", "limited": "magenta"}


def _table(columns: Sequence[tuple[str, JustifyMethod]], **kw: Any) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, justify in columns:
        table.add_column(col, justify=justify, **kw)
    return table


def calls_table(records: list[Any]) -> Table:
    """One row per call: TIME, PROJECT, TOOL, OUTCOME (coloured), MS, CLIENT, SESSION."""
    # "left" is add_column's default; spelled out so each column's justify is a typed literal.
    table = _table((("TIME", "left"), ("PROJECT", "left"), ("TOOL", "left"), ("OUTCOME", "left"),
                    ("MS", "right"), ("CLIENT", "left"), ("SESSION", "left")))
    for r in records:
        # names and client info come from clients: never let them act as rich markup
        tool = cell(r.canonical_id) if r.canonical_id else f"[dim]{cell(r.presented_name)}[/dim]"
        outcome = cell(r.outcome + (f" ({r.error_class})" if r.error_class else ""))
        style = _OUTCOME_STYLE.get(r.outcome, "red")
        client = cell(" ".join(x for x in (r.client_name, r.client_version) if x) or "-")
        table.add_row(fmt.local_time(r.ts), cell(r.project), tool, f"[{style}]{outcome}[/{style}]",
                      f"{r.duration_ms:.1f}", client, cell((r.session_id or "-")[:12]))
    return table


def status_table(s: LogSummary) -> Table:
    """`logs status`: path, rows, size, oldest and newest call, migrations."""
    from rich.table import Table

    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Path", cell(str(s.path)))
    table.add_row("Rows", str(s.rows))
    table.add_row("Size", fmt.human_size(s.size_bytes))
    table.add_row("Oldest", fmt.local_time(s.oldest_ts) if s.oldest_ts is not None else "-")
    table.add_row("Newest", fmt.local_time(s.newest_ts) if s.newest_ts is not None else "-")
    table.add_row("Migrations", ", ".join(s.migrations))
    return table


def stats_table(stats: list[ToolStats]) -> Table:
    """`logs stats`: per tool its calls (with a bar), errors, error rate, p50/p95 and last call."""
    table = _table((("TOOL", "left"), ("CALLS", "right")))
    bars.column(table)                                  # which tools carry the work, at a glance
    more: tuple[tuple[str, JustifyMethod], ...] = (
        ("ERRORS", "right"), ("ERROR%", "right"), ("P50 MS", "right"), ("P95 MS", "right"), ("LAST CALL", "left"))
    for col, justify in more:
        table.add_column(col, justify=justify)
    top = max((st.calls for st in stats), default=0)
    for st in stats:
        table.add_row(cell(st.canonical_id), str(st.calls), bars.bar(st.calls, top), str(st.errors),
                      f"{100 * st.error_rate:.1f}", f"{st.p50_ms:.1f}", f"{st.p95_ms:.1f}", fmt.local_time(st.last_ts))
    return table


def breakdown_table(by: str, rows: Sequence[Breakdown]) -> Table:
    """Calls per value of `by`: the value, CALLS, SHARE, a bar, ERRORS, LAST CALL (local time)."""
    table = _table(((by.upper(), "left"), ("CALLS", "right"), ("SHARE", "right")), no_wrap=True)
    bars.column(table)                                  # which value carries the calls, at a glance
    more: tuple[tuple[str, JustifyMethod], ...] = (("ERRORS", "right"), ("LAST CALL", "left"))
    for col, justify in more:
        table.add_column(col, justify=justify, no_wrap=True)
    top = max((r.calls for r in rows), default=0)
    for r in rows:
        table.add_row(cell(r.key if r.key is not None else fmt.NONE_LABEL), str(r.calls), fmt.pct(fmt.share(r, rows)),
                      bars.bar(r.calls, top), str(r.errors), fmt.local_time(r.last_ts))
    return table


def breakdown_section(by: str, rows: Sequence[Breakdown], period: str) -> list[Part]:
    """`breakdown_table` under a headline (the section `favourites suggest` and `surface` print with --by)."""
    total = sum(r.calls for r in rows)
    headline = f"Calls by {by} {period}: {total} call(s), {len(rows)} value(s)"
    return [headline, breakdown_table(by, rows)] if rows else [headline]
