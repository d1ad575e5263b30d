"""The surface report for a terminal (`mcpctl surface -o table`): one section after another, as
lines and rich tables (`presentation.tables`); the CLI prints them. The words it shares with the
markdown and JSON forms are `presentation.surface_formats`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpctl.presentation import bars
from mcpctl.presentation import surface_formats as sf
from mcpctl.presentation.tables import Part, cell, line

if TYPE_CHECKING:
    from rich.table import Table

    from mcpctl.presentation.surface_report import SurfaceReport


def _table(*cols: str, right: tuple[str, ...] = ()) -> Table:
    from rich.table import Table

    t = Table(box=None, pad_edge=False, header_style="bold")
    for c in cols:
        t.add_column(c, justify="right" if c in right else "left", no_wrap=c not in ("EVIDENCE", "SERVERS"),
                     overflow="fold")
    return t


def _servers(r: SurfaceReport) -> list[Part]:
    # FULL differs from ≈ TOKENS only when the presentation lists less (deferred) or more (favourites)
    full = r.presentation != "flat"
    status = any(s.status != "listed" for s in r.servers)
    num = ("TOOLS", "ENABLED", "LISTED", "≈ TOKENS", "SHARE")
    more = (*(("FULL ≈ TOKENS",) if full else ()), "CALLS")
    t = _table("SERVER", *num, right=num)
    bars.column(t)                                          # each server's tokens, at a glance
    for c in (*more, *(("STATUS",) if status else ())):
        t.add_column(c, justify="right" if c in more else "left", no_wrap=True)
    top = max([s.tokens for s in r.servers] + [r.builtins_tokens], default=0)

    def row(*cells: str, tokens: int = 0, full_cell: str = "", status_cell: str = "", **kw: Any) -> None:
        head, calls = cells[:-1], cells[-1]
        t.add_row(*head, bars.bar(tokens, top), *((full_cell,) if full else ()), calls,
                  *((status_cell,) if status else ()), **kw)

    for s in r.servers:
        row(cell(s.name), str(s.tools), str(s.enabled), str(s.listed), f"{s.tokens:,}", sf.pct(s.share),
            str(s.calls), tokens=s.tokens, full_cell=f"{s.full_tokens:,}",
            status_cell="" if s.status == "listed" else cell(s.status))
    cur = r.current
    if r.builtins_listed:
        row("(mcpctl built-ins)", "", "", str(r.builtins_listed), f"{r.builtins_tokens:,}",
            sf.pct(r.builtins_tokens / cur.tokens if cur.tokens else 0.0), "", tokens=r.builtins_tokens)
    row("TOTAL", str(len(r.tools)), str(len(r.enabled)), str(cur.listed), f"{cur.tokens:,}", "", str(r.calls),
        full_cell=f"{sum(s.full_tokens for s in r.servers):,}", style="bold")
    return [t, line("≈ TOKENS: the definitions as the project's presentation lists them"
                    + ("; FULL: every enabled tool's whole definition (what listing it flat costs)." if full else "."))]


def _modes(r: SurfaceReport) -> list[Part]:
    t = _table("PRESENTATION", "LISTED", "≈ TOKENS", "VS FLAT", "INSTRUCTIONS ≈ TOKENS",
              right=("LISTED", "≈ TOKENS", "VS FLAT", "INSTRUCTIONS ≈ TOKENS"))
    flat = next(m for m in r.modes if m.mode == "flat")
    for m in r.modes:
        t.add_row(m.mode + ("  ← this project" if m.current else ""), str(m.listed), f"{m.tokens:,}",
                  sf.pct(m.tokens / flat.tokens if flat.tokens else None), f"{m.instructions_tokens:,}")
    return [t]


def _reach(r: SurfaceReport) -> list[Part]:
    writers = r.write_reach
    parts: list[Part] = [line(f"Write reach: {len(writers)} of {len(r.enabled)} enabled tools can write, "
                              "delete or send outward")]
    if writers:
        t = _table("TOOL", "CAN", "FROM", "EVIDENCE")
        for w in writers:
            t.add_row(cell(w.id), sf.kinds(w), w.reach.source, cell(w.reach.evidence))
        parts.append(t)
    return parts


def _collisions(r: SurfaceReport) -> list[Part]:
    if not r.collisions:
        return [line("Name collisions: none")]
    t = _table("NAME", "SERVERS")
    for c in r.collisions:
        t.add_row(f"{cell(c.name)} ×{len(c.ids)}", cell(", ".join(i.split("/", 1)[0] for i in c.ids)))
    return [line(f"Name collisions: {len(r.collisions)} tool name(s) listed by several servers"), t]


def _confusion(r: SurfaceReport) -> list[Part]:
    pairs = r.near_duplicates
    says = [f"Near-duplicate descriptions across servers (similarity ≥ {r.threshold:.2f}): "
            + (f"{r.near_duplicate_total:,} pair(s)" if pairs else "none")]
    for p in pairs[:sf.TABLE_PAIRS]:
        says += [f"  {p.score:.2f}  {p.a}  ~  {p.b}" + ("  (same name)" if p.same_name else ""),
                 f"        {p.a}: {sf.one_line(p.description_a)}", f"        {p.b}: {sf.one_line(p.description_b)}"]
    if r.near_duplicate_total > sf.TABLE_PAIRS:
        says.append(f"  … and {r.near_duplicate_total - sf.TABLE_PAIRS:,} more ({sf.json_lists(r)})")
    if r.suspicious:
        says += ["", sf.suspicious_headline(r), *(f"  {f.tool}: {f.why}: {f.text}" for f in r.suspicious)]
    return [*_collisions(r), "", *map(line, says)]


def _use(r: SurfaceReport) -> list[Part]:
    parts: list[Part] = [line(f"Use in the last {r.window_days:g} days: {r.calls} call(s), {r.failed} failed, "
                              f"{r.neighbour} followed within a minute by a different tool of the same server")]
    used = sorted((x for x in r.tools if x.calls), key=lambda x: (-x.calls, x.id))
    if used:
        t = _table("TOOL", "CALLS", "FAILED", "NEIGHBOUR NEXT", "LAST CALL", right=("CALLS", "FAILED", "NEIGHBOUR NEXT"))
        for x in used:
            t.add_row(cell(x.id) + ("" if x.enabled else " (disabled)"), str(x.calls), str(x.failed),
                      str(x.neighbour), sf.when(x.last_call))
        parts.append(t)
    says = [f"  {n.first} → {n.then} within a minute ×{n.calls}" for n in r.neighbour_pairs[:5]]
    says += [f"  {name}: {calls} call(s), not in the catalogue now" for name, calls in sorted(r.unknown_calls.items())]
    never = r.never_called
    if never:
        says.append(f"Never called ({len(never)} enabled tools):")
        says += [f"  {server}: " + ", ".join(x.name for x in never if x.server == server)
                 for server in dict.fromkeys(x.server for x in never)]
    return [*parts, *map(line, says)]


def _profiles(r: SurfaceReport) -> list[Part]:
    if not r.profiles:
        return []
    names = tuple(p.name.upper() for p in r.profiles)
    t = _table("TOOL", *names, right=names)
    for x in r.enabled:
        t.add_row(cell(x.id), *(str(x.profile_calls.get(p.name, 0)) if x.profiles.get(p.name) else "·"
                                for p in r.profiles))
    return ["", line("Profiles × tools (calls in the window; · = not visible to the profile):"), t]


def _advice(r: SurfaceReport) -> list[Part]:
    says = ["The three numbers to know before adding a server:", *(f"  {v:>6}  {text}" for v, text in sf.numbers(r)), ""]
    if r.recommendations:
        says.append("Recommendations (each line runs as is):")
        for rec in r.recommendations:
            saves = f"; saves ≈ {rec.saves_tokens:,} tokens a request when listed" if rec.saves_tokens else ""
            says += [f"  # {rec.reason}{saves}", f"  {rec.command}"]
    else:
        says.append("Recommendations: none")
    says += ["", *(f"Note: {note}" for note in r.notes)]
    return list(map(line, says))


def surface_parts(r: SurfaceReport) -> list[Part]:
    """The report for a terminal: one section after another, as `mcpctl surface` prints it."""
    overrides = [line(sf.overrides_line(r))] if r.overrides else []
    return [line(sf.headline(r)), "", *_servers(r), "", *_modes(r), *overrides, "", *_reach(r), "",
            *_confusion(r), "", *_use(r), *_profiles(r), "", *_advice(r)]
