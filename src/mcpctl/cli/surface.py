"""`mcpctl surface --project P`: a project's tool surface, priced and judged (`catalogue.surface`).

Reads the catalogue exactly as the gateway presents it (the cache; servers never listed are
listed now, every server with `--refresh`) and the invocation log's calls in the window, and
renders the core's `SurfaceReport` for people (`table`), scripts (`json`, keys pinned by a test)
or a pull-request comment (`markdown`); the last two are `presentation.surface_formats`. Only the report goes to stdout. `--by credential|host|...`
adds the window's calls per token name, gateway host, ... (`cli/_breakdown.py`), in every format.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpctl.audit.formats import breakdown_markdown, breakdown_section_json
from mcpctl.presentation import surface_formats as sf

from . import _bars as bars
from . import _breakdown as bd
from ._common import (
    Project,
    check_format,
    cli_errors,
    out,
    output_option,
    print_json,
    safe,
    write_stdout,
)

if TYPE_CHECKING:
    from rich.table import Table

    from mcpctl.presentation.surface import SurfaceReport

FORMATS = ("table", "json", "markdown")
_now = time.time                # the clock the window is measured from (a test can fix it)


# -- gathering -------------------------------------------------------------------------------------


def surface_report(project: str, *, window_days: float, refresh: bool = False, now: float | None = None
                   ) -> tuple[SurfaceReport, list[str]]:
    """The report for `project` and the servers that could not be listed (each warned about once)."""
    from mcpctl.catalogue.tokens import token_counter
    from mcpctl.presentation.surface import surface_of

    from ._common import invocation_log
    from ._listing import listed_catalogue, warn_unservable, working

    cached, failed = listed_catalogue(project, refresh=refresh, progress=True)
    failed = warn_unservable(cached, failed)
    now = _now() if now is None else now
    with working("reading the invocation log") as stage, invocation_log() as log:
        report = surface_of(cached, log, window_days=window_days, now=now, counter=token_counter(), on_stage=stage)
    return report, failed


# -- table -----------------------------------------------------------------------------------------


def _table(*cols: str, right: tuple[str, ...] = ()) -> Table:
    from rich.table import Table

    t = Table(box=None, pad_edge=False, header_style="bold")
    for c in cols:
        t.add_column(c, justify="right" if c in right else "left", no_wrap=c not in ("EVIDENCE", "SERVERS"),
                     overflow="fold")
    return t


def _say(text: str = "") -> None:
    out.print(safe(text, markup=False), markup=False)


def _servers_table(r: SurfaceReport) -> None:
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
        row(safe(s.name), str(s.tools), str(s.enabled), str(s.listed), f"{s.tokens:,}", sf.pct(s.share),
            str(s.calls), tokens=s.tokens, full_cell=f"{s.full_tokens:,}",
            status_cell="" if s.status == "listed" else safe(s.status))
    cur = r.current
    if r.builtins_listed:
        row("(mcpctl built-ins)", "", "", str(r.builtins_listed), f"{r.builtins_tokens:,}",
            sf.pct(r.builtins_tokens / cur.tokens if cur.tokens else 0.0), "", tokens=r.builtins_tokens)
    row("TOTAL", str(len(r.tools)), str(len(r.enabled)), str(cur.listed), f"{cur.tokens:,}", "", str(r.calls),
        full_cell=f"{sum(s.full_tokens for s in r.servers):,}", style="bold")
    out.print(t)
    _say("≈ TOKENS: the definitions as the project's presentation lists them"
         + ("; FULL: every enabled tool's whole definition (what listing it flat costs)." if full else "."))


def _modes_table(r: SurfaceReport) -> None:
    t = _table("PRESENTATION", "LISTED", "≈ TOKENS", "VS FLAT", "INSTRUCTIONS ≈ TOKENS",
               right=("LISTED", "≈ TOKENS", "VS FLAT", "INSTRUCTIONS ≈ TOKENS"))
    flat = next(m for m in r.modes if m.mode == "flat")
    for m in r.modes:
        t.add_row(m.mode + ("  ← this project" if m.current else ""), str(m.listed), f"{m.tokens:,}",
                  sf.pct(m.tokens / flat.tokens if flat.tokens else None), f"{m.instructions_tokens:,}")
    out.print(t)


def _reach_section(r: SurfaceReport) -> None:
    writers = r.write_reach
    _say(f"Write reach: {len(writers)} of {len(r.enabled)} enabled tools can write, delete or send outward")
    if writers:
        t = _table("TOOL", "CAN", "FROM", "EVIDENCE")
        for w in writers:
            t.add_row(safe(w.id), sf.kinds(w), w.reach.source, safe(w.reach.evidence))
        out.print(t)


def _confusion_section(r: SurfaceReport) -> None:
    if r.collisions:
        _say(f"Name collisions: {len(r.collisions)} tool name(s) listed by several servers")
        t = _table("NAME", "SERVERS")
        for c in r.collisions:
            t.add_row(f"{safe(c.name)} ×{len(c.ids)}", safe(", ".join(i.split("/", 1)[0] for i in c.ids)))
        out.print(t)
    else:
        _say("Name collisions: none")
    _say()
    pairs = r.near_duplicates
    _say(f"Near-duplicate descriptions across servers (similarity ≥ {r.threshold:.2f}): "
         + (f"{r.near_duplicate_total:,} pair(s)" if pairs else "none"))
    for p in pairs[:sf.TABLE_PAIRS]:
        _say(f"  {p.score:.2f}  {p.a}  ~  {p.b}" + ("  (same name)" if p.same_name else ""))
        _say(f"        {p.a}: {sf.one_line(p.description_a)}")
        _say(f"        {p.b}: {sf.one_line(p.description_b)}")
    if r.near_duplicate_total > sf.TABLE_PAIRS:
        _say(f"  … and {r.near_duplicate_total - sf.TABLE_PAIRS:,} more ({sf.json_lists(r)})")
    if r.suspicious:
        _say()
        _say(sf.suspicious_headline(r))
        for f in r.suspicious:
            _say(f"  {f.tool}: {f.why}: {f.text}")


def _use_section(r: SurfaceReport) -> None:
    _say(f"Use in the last {r.window_days:g} days: {r.calls} call(s), {r.failed} failed, {r.neighbour} followed "
         "within a minute by a different tool of the same server")
    used = sorted((x for x in r.tools if x.calls), key=lambda x: (-x.calls, x.id))
    if used:
        t = _table("TOOL", "CALLS", "FAILED", "NEIGHBOUR NEXT", "LAST CALL", right=("CALLS", "FAILED", "NEIGHBOUR NEXT"))
        for x in used:
            t.add_row(safe(x.id) + ("" if x.enabled else " (disabled)"), str(x.calls), str(x.failed),
                      str(x.neighbour), sf.when(x.last_call))
        out.print(t)
    for n in r.neighbour_pairs[:5]:
        _say(f"  {n.first} → {n.then} within a minute ×{n.calls}")
    for name, calls in sorted(r.unknown_calls.items()):
        _say(f"  {name}: {calls} call(s), not in the catalogue now")
    never = r.never_called
    if never:
        _say(f"Never called ({len(never)} enabled tools):")
        for server in dict.fromkeys(x.server for x in never):
            _say(f"  {server}: " + ", ".join(x.name for x in never if x.server == server))


def _profiles_section(r: SurfaceReport) -> None:
    if not r.profiles:
        return
    _say()
    _say("Profiles × tools (calls in the window; · = not visible to the profile):")
    t = _table("TOOL", *(p.name.upper() for p in r.profiles), right=tuple(p.name.upper() for p in r.profiles))
    for x in r.enabled:
        t.add_row(safe(x.id), *(str(x.profile_calls.get(p.name, 0)) if x.profiles.get(p.name) else "·"
                                  for p in r.profiles))
    out.print(t)


def _advice_section(r: SurfaceReport) -> None:
    _say("The three numbers to know before adding a server:")
    for value, text in sf.numbers(r):
        _say(f"  {value:>6}  {text}")
    _say()
    if r.recommendations:
        _say("Recommendations (each line runs as is):")
        for rec in r.recommendations:
            saves = f"; saves ≈ {rec.saves_tokens:,} tokens a request when listed" if rec.saves_tokens else ""
            _say(f"  # {rec.reason}{saves}")
            _say(f"  {rec.command}")
    else:
        _say("Recommendations: none")
    _say()
    for note in r.notes:
        _say(f"Note: {note}")


def render_table(r: SurfaceReport) -> None:
    """The report for a terminal: one section after another, as `mcpctl surface` prints it."""
    _say(sf.headline(r))
    _say()
    _servers_table(r)
    _say()
    _modes_table(r)
    if r.overrides:
        _say(sf.overrides_line(r))
    _say()
    _reach_section(r)
    _say()
    _confusion_section(r)
    _say()
    _use_section(r)
    _profiles_section(r)
    _say()
    _advice_section(r)


# -- the command -----------------------------------------------------------------------------------


def _print_report(report: SurfaceReport, output: str, by: str | None) -> None:
    """The report in `output`'s format, with the window's calls per `by` (if given) at its end."""
    usage = bd.usage_by(by, project=report.project, since=report.since, until=report.until) if by else None
    period = f"in the last {report.window_days:g} days"
    if output == "json":
        print_json({**sf.report_json(report), **({"by": breakdown_section_json(by, usage)} if by and usage is not None else {})})
    elif output == "markdown":
        text = sf.render_markdown(report)
        if by and usage is not None:
            text += "\n" + "\n".join(breakdown_markdown(by, usage, period)) + "\n"
        write_stdout("\n".join(safe(line, markup=False) for line in text.split("\n")))
    else:
        render_table(report)
        if by and usage is not None:
            _say()
            bd.render_section(by, usage, period)


def register(app: typer.Typer) -> None:
    @app.command("surface", rich_help_panel="Gateway",
                 short_help="Price and judge a project's tool surface: tokens, write reach, look-alikes, use.")
    @cli_errors
    def surface_cmd(
        project: Project,
        window: Annotated[float, typer.Option("--window", min=0.001, help="Days of the invocation log to judge use by.")
                          ] = 30.0,
        output: Annotated[str, output_option(FORMATS)] = "table",
        refresh: Annotated[bool, typer.Option("--refresh", help="List every server now (otherwise the cached "
                                              "listing; servers never listed are listed anyway).")] = False,
        by: Annotated[str | None, typer.Option("--by", help=bd.by_option_help("Also the window's calls"))] = None,
    ) -> None:
        """Price and judge a project's tool surface: tokens per server and per presentation mode, tools that
        can write/delete/send, name collisions and near-duplicate descriptions across servers, use from the
        invocation log, and runnable recommendations. Token counts are approximate."""
        from mcpctl.errors import EXIT_UPSTREAM

        check_format(output, FORMATS)
        bd.check_by(by)
        report, failed = surface_report(project, window_days=window, refresh=refresh)
        _print_report(report, output, by)
        if failed:      # each failure was reported once, above; the report says it is incomplete
            raise typer.Exit(EXIT_UPSTREAM)
