"""`favourites suggest` as a table: at most `--top` rows, what lies below the floor in one line.

The rows are the suggested tools (at most `--top`, best first) and, in the room `--top` leaves, the
used tools that are flagged (disabled, mostly failing, ...), in the order of their calls. Tools used
below the floor of use (`--min-calls`, `--min-sessions`) collapse into one line with their count and
calls, as do the eligible ones beyond `--top`: `-o json` lists every one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpctl.catalogue.favourites import DEFAULT_FLOOR, Floor

from . import _bars as bars
from ._common import out, safe

if TYPE_CHECKING:
    from mcpctl.catalogue.favourites import Candidate, Suggestions


def shown_rows(s: Suggestions, top: int) -> tuple[list[Candidate], list[Candidate], list[Candidate]]:
    """(rows, below the floor, eligible beyond `top`), each in the order of their calls."""
    room = max(top - len(s.suggested), 0)
    flagged = [c for c in s.candidates if c.flag][:room]
    rows = [c for c in s.candidates if c.suggested or any(c is f for f in flagged)]
    below = [c for c in s.candidates if c.below]
    beyond = [c for c in s.candidates if not c.suggested and not c.below and not any(c is r for r in rows)]
    return rows, below, beyond


def render_suggest(project: str, s: Suggestions, period: str, floor: Floor | None = None, top: int = 20) -> None:
    from rich.table import Table

    floor = floor or DEFAULT_FLOOR
    out.print(f"Favourites for project {project}: {s.calls} calls in {s.sessions} session(s) {period}; "
              f"suggested from {floor.calls} calls in {floor.sessions} sessions; ★ = pinned now", markup=False)
    rows, below, beyond = shown_rows(s, top)
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
        table.add_row(str(rank) if c.suggested else "-", "★" if c.pinned else "", safe(c.use.canonical_id),
                      str(c.use.calls), bars.bar(c.use.calls, largest), str(c.use.sessions), f"{c.use.error_rate:.0%}",
                      _when(c.use.last_ts), safe(f"flagged: {c.flag}" if c.flag else ""))
    if rows:
        out.print(table)
    if below:
        out.print(f"+ {len(below)} tool(s) used below the floor of {floor.calls} calls in {floor.sessions} sessions "
                  f"({sum(c.use.calls for c in below)} calls in all): --min-calls/--min-sessions lower it, "
                  "-o json lists them", markup=False)
    if beyond:
        flagged = sum(1 for c in beyond if c.flag)
        why = ", ".join(w for w in (f"{flagged} flagged" if flagged else "",
                                    f"{len(beyond) - flagged} beyond --top {top}" if len(beyond) > flagged else "") if w)
        out.print(f"+ {len(beyond)} more not shown ({why}): -o json lists them", markup=False)
    if s.pinned_unused:
        out.print(f"Pinned but not called in the window (dropped by the line below): "
                  f"{safe(', '.join(s.pinned_unused), markup=False)}", markup=False)


def _when(ts: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))
