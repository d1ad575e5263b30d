"""A project's favourites as `mcpctl favourites list` and `favourites suggest` show them on a
terminal: lines and rich tables (`presentation.tables`), printed by the CLI. What they show is
`presentation.favourites`'s (the report, the suggestions); `-o json|yaml` prints that as it is.

`suggest` shows at most `--top` rows: the suggested tools (best first) and, in the room `--top`
leaves, the used tools that are flagged (disabled, mostly failing, ...), in the order of their
calls. Tools used below the floor of use (`--min-calls`, `--min-sessions`) collapse into one line
with their count and calls, as do the eligible ones beyond `--top`: `-o json` lists every one.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcpctl.catalogue.favourites import DEFAULT_FLOOR, Floor
from mcpctl.presentation import bars
from mcpctl.presentation.tables import Part, cell, line

if TYPE_CHECKING:
    from mcpctl.catalogue.favourites import Candidate, Suggestions


def list_parts(report: dict[str, Any]) -> list[Part]:
    """`favourites list`: the headline, the pinned favourites (★, presented name, state, why not
    listed), what is under all/ and the instructions the client is sent."""
    from rich.table import Table

    rows = report["favourites"]
    parts: list[Part] = [
        f"project/{report['project']}: {report['presentation']} presentation, {report['names']} names, "
        f"{len(rows)} of at most {report['maxFavourites']} favourites pinned"
        + (", session gate on (favourites appear after begin_session)" if report["gate"] else "")]
    if rows:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("", "#", "CANONICAL ID", "PRESENTED NAME", "STATE", "WHY NOT LISTED / DESCRIPTION"):
            table.add_column(col, no_wrap=col != "WHY NOT LISTED / DESCRIPTION",
                             overflow="fold" if col.startswith("WHY") else "ignore")
        for i, r in enumerate(rows, 1):
            detail = r["reason"] or " ".join(r["description"].split())[:90]
            table.add_row("★", str(i), cell(r["id"]), cell(r["name"] or "-"), r["state"], cell(detail))
        parts.append(table)
    else:
        parts.append("No favourites pinned. Pin some with: mcpctl favourites add --project "
                     f"{report['project']} SERVER/TOOL …, or let the log suggest them: mcpctl favourites suggest "
                     f"--project {report['project']}")
    a = report["all"]
    if a["count"]:
        how = "listed" if a["listed"] else "not listed: reachable through search_tools and call_tool"
        parts.append(f"Under all/: {a['count']} tools as {a['pattern']} ({how})")
    return [*parts, "Instructions sent to the client:", f"  {line(report['instructions'])}"]


def shown_rows(s: Suggestions, top: int) -> tuple[list[Candidate], list[Candidate], list[Candidate]]:
    """(rows, below the floor, eligible beyond `top`), each in the order of their calls."""
    room = max(top - len(s.suggested), 0)
    flagged = [c for c in s.candidates if c.flag][:room]
    rows = [c for c in s.candidates if c.suggested or any(c is f for f in flagged)]
    below = [c for c in s.candidates if c.below]
    beyond = [c for c in s.candidates if not c.suggested and not c.below and not any(c is r for r in rows)]
    return rows, below, beyond


def when(ts: float) -> str:
    """A last use as `favourites suggest` says it: local time to the minute."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _suggest_table(rows: list[Candidate]) -> Part:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("#", "", "TOOL", "CALLS"):
        table.add_column(col, justify="right" if col in ("#", "CALLS") else "left", no_wrap=True)
    bars.column(table)                                  # which tools carry the work, at a glance
    for col in ("SESSIONS", "ERRORS", "LAST USE", "NOTE"):
        table.add_column(col, justify="right" if col in ("SESSIONS", "ERRORS") else "left", no_wrap=True)
    largest = max((c.use.calls for c in rows), default=0)
    rank = 0
    for c in rows:
        if c.suggested:
            rank += 1
        table.add_row(str(rank) if c.suggested else "-", "★" if c.pinned else "", cell(c.use.canonical_id),
                      str(c.use.calls), bars.bar(c.use.calls, largest), str(c.use.sessions), f"{c.use.error_rate:.0%}",
                      when(c.use.last_ts), cell(f"flagged: {c.flag}" if c.flag else ""))
    return table


def suggest_parts(project: str, s: Suggestions, period: str, floor: Floor | None = None, top: int = 20) -> list[Part]:
    """`favourites suggest` as a table: at most `top` rows, what lies below the floor in one line."""
    floor = floor or DEFAULT_FLOOR
    rows, below, beyond = shown_rows(s, top)
    parts: list[Part] = [
        f"Favourites for project {project}: {s.calls} calls in {s.sessions} session(s) {period}; "
        f"suggested from {floor.calls} calls in {floor.sessions} sessions; ★ = pinned now",
        *([_suggest_table(rows)] if rows else [])]
    if below:
        parts.append(f"+ {len(below)} tool(s) used below the floor of {floor.calls} calls in {floor.sessions} sessions "
                     f"({sum(c.use.calls for c in below)} calls in all): --min-calls/--min-sessions lower it, "
                     "-o json lists them")
    if beyond:
        flagged = sum(1 for c in beyond if c.flag)
        why = ", ".join(w for w in (f"{flagged} flagged" if flagged else "",
                                    f"{len(beyond) - flagged} beyond --top {top}" if len(beyond) > flagged else "") if w)
        parts.append(f"+ {len(beyond)} more not shown ({why}): -o json lists them")
    if s.pinned_unused:
        parts.append(f"Pinned but not called in the window (dropped by the line below): {line(', '.join(s.pinned_unused))}")
    return parts
