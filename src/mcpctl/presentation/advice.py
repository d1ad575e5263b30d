"""What a `mcpctl surface` report recommends (runnable `mcpctl` lines) and notes about itself."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from mcpctl.catalogue.judge import ANNOTATION_NOTE, DELETE, SEND, WRITE
from mcpctl.presentation.surface_report import Recommendation, SurfaceReport, ToolSurface

if TYPE_CHECKING:
    from mcpctl.presentation.catalogue import Catalogue

FLAT: Final = "flat"
# Disabling tools because they were never called needs some use to judge by: below this many calls
# in the window the report lists the never-called tools but recommends no `tools disable` line.
MIN_CALLS_TO_JUDGE: Final = 20
MAX_FAVOURITE_SUGGESTIONS: Final = 5
MOSTLY_FAILS: Final = 0.5


# -- recommendations ---------------------------------------------------------------------------------


def recommendations(report: SurfaceReport, catalogue: Catalogue) -> list[Recommendation]:
    """Runnable lines, from use in the window: disable what was never called (given at least
    MIN_CALLS_TO_JUDGE calls; whole servers as `server/*`, tools that can write apart), unpin
    favourites never called, pin the most called tools. Profile lines are not made yet."""
    p = report.project
    out: list[Recommendation] = []
    if report.calls == 0:
        return out
    evidence = f"{report.calls} call(s) in the last {report.window_days:g} days"
    pinned = set(catalogue.project.favourite_index.tools)
    by_server: dict[str, list[ToolSurface]] = defaultdict(list)
    for t in report.enabled:
        by_server[t.server].append(t)
    judge = report.calls >= MIN_CALLS_TO_JUDGE
    idle_servers = [s for s, ts in by_server.items() if judge and ts and all(t.calls == 0 for t in ts)
                    and not any(t.id in pinned for t in ts)]
    if idle_servers:
        saved = sum(t.tokens for s in idle_servers for t in by_server[s])
        out.append(Recommendation(
            "disable-idle-servers", f"no tool of {', '.join(idle_servers)} was called ({evidence})",
            ("mcpctl", "tools", "disable", "--project", p, *(f"{s}/*" for s in idle_servers)), saved))
    idle = set(idle_servers)
    unused = [t for t in report.never_called if judge and t.server not in idle and t.id not in pinned]
    writers = [t for t in unused if t.reach.can_write]
    if writers:
        out.append(Recommendation(
            "disable-unused-writers", f"never called and can {'/'.join(_kinds(writers))} ({evidence})",
            ("mcpctl", "tools", "disable", "--project", p, *(t.id for t in writers)), sum(t.tokens for t in writers)))
    readers = [t for t in unused if not t.reach.can_write]
    if readers:
        out.append(Recommendation(
            "disable-unused", f"never called ({evidence})",
            ("mcpctl", "tools", "disable", "--project", p, *(t.id for t in readers)), sum(t.tokens for t in readers)))
    fav = catalogue.project.favourite_index
    pinned_idle = [cid for cid in fav.tools if judge and cid in {t.id for t in report.never_called}]
    if pinned_idle:
        out.append(Recommendation("unpin-unused", f"pinned as favourites but never called ({evidence})",
                                  ("mcpctl", "favourites", "remove", "--project", p, *pinned_idle)))
    room = max(0, fav.max_favourites - (len(fav.tools) - len(pinned_idle)))
    used = sorted((t for t in report.enabled if t.calls >= 2 and t.id not in pinned
                   and t.failed / t.calls <= MOSTLY_FAILS), key=lambda t: (-t.calls, t.id))
    picks = used[:min(room, MAX_FAVOURITE_SUGGESTIONS)]
    if picks:
        why = "most called, not pinned"
        if report.presentation == FLAT:
            why += ("; favourites are presented by the favourite index, which this turns on unless the project "
                    "sets presentation: flat")
        out.append(Recommendation("favourites", f"{why} ({evidence})",
                                  ("mcpctl", "favourites", "add", "--project", p, *(t.id for t in picks))))
    return out


def _kinds(tools: Iterable[ToolSurface]) -> list[str]:
    seen = {k for t in tools for k in t.reach.kinds}
    return [k for k in (WRITE, DELETE, SEND) if k in seen]


def notes(report: SurfaceReport) -> list[str]:
    out = [f"Token counts are approximate: {report.tokenizer.label}, of the compact JSON of each definition's "
           "name, description, inputSchema and annotations as presented.", ANNOTATION_NOTE]
    if report.gate:
        out.append("The session gate is on: until begin_session a session lists only begin_session; the "
                   "prices are of the list it gets after that.")
    gone = [s.name for s in report.servers if s.status != "listed"]
    if gone:
        out.append(f"Incomplete: {', '.join(gone)} not listed, so their tools are not counted.")
    if report.calls == 0:
        out.append(f"No calls in the last {report.window_days:g} days: use-based recommendations need the "
                   "invocation log (serve the project to an agent and let it work).")
    elif report.calls < MIN_CALLS_TO_JUDGE and report.never_called:
        out.append(f"Only {report.calls} call(s) in the last {report.window_days:g} days: too few to recommend "
                   f"disabling the tools never called (at least {MIN_CALLS_TO_JUDGE}); widen --window or let "
                   "agents work first.")
    return out

