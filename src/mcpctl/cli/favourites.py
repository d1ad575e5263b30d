"""`mcpctl favourites list|add|remove|suggest --project P`: a project's favourite index.

`list` shows exactly what the gateway presents (the same pipeline, built from the catalogue
cache); `add`/`remove` pin and unpin tools and `set` replaces them (validated like `apply`);
`suggest` ranks tools by their calls in the invocation log and prints a ready-to-run
`mcpctl favourites set` line, which changes nothing but the favourites (`--by credential|host`
adds the window's calls per token name or gateway host: `cli/_breakdown.py`). `suggest --apply` runs
that very command (`presentation.favourites.set_favourites_of`), so the line and `--apply` cannot
drift apart. What is computed or edited is `presentation.favourites`'s; this module renders it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpctl.audit.formats import breakdown_section_json
from mcpctl.catalogue.favourites import DEFAULT_FLOOR, Floor
from mcpctl.presentation import favourites as fav

from . import _breakdown as bd
from ._common import (
    Project,
    check_format,
    cli_errors,
    complete_tool_ids,
    err,
    out,
    output_option,
    print_json,
    safe,
    show,
    the_cache,
    the_store,
    warn,
    write_stdout,
)

if TYPE_CHECKING:
    from mcpctl.catalogue.favourites import Suggestions
    from mcpctl.presentation.catalogue import CachedCatalogue

_now = time.time            # the clock the window is measured from (a test can fix it)


def _complete_pinned(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:

    project = ctx.params.get("project")
    try:
        spec = the_store().get("Project", str(project)).get("spec") or {}
    except Exception:
        return []
    pinned = (spec.get("favouriteIndex") or {}).get("tools") or []
    return [(t, "pinned favourite") for t in pinned if t.startswith(incomplete)]


_Ids = Annotated[list[str], typer.Argument(help="Canonical tool ids server/tool.", autocompletion=complete_tool_ids)]
_Pinned = Annotated[list[str], typer.Argument(help="Canonical tool ids server/tool.", autocompletion=_complete_pinned)]


# -- list ----------------------------------------------------------------------------------------------


def _render_list(report: dict[str, Any], cached: CachedCatalogue) -> None:
    from mcpctl.presentation.favourites_table import list_parts

    show(list_parts(report))
    for server in cached.unlisted:
        warn(f"server {server!r} has not been listed yet: its tools are unknown "
             f"(mcpctl tools list --project {report['project']} --refresh)")


def _warn_unknown(project: str, ids: list[str]) -> None:
    from mcpctl.presentation.favourites import unknown_ids

    for message in unknown_ids(the_store(), the_cache(), project, ids):
        warn(f"{message} (a favourite is presented only once its server lists it)")


def _report_cost(project: str, before: CachedCatalogue) -> None:
    """What the change did to the list's size, and a warning when favourites cost more than they save."""
    from mcpctl.presentation.catalogue import cached_catalogue

    said, warning = fav.cost_change(project, before, cached_catalogue(project, the_store(), the_cache()))
    err.print(said, markup=False)
    if warning:
        warn(warning)


# -- suggest -------------------------------------------------------------------------------------------


def _print_list(report: dict[str, Any], cached: CachedCatalogue, output: str) -> None:
    if output == "json":
        print_json(report)
    elif output == "yaml":
        from mcpctl.resources.yamlio import to_yaml

        write_stdout(to_yaml(report))
    else:
        _render_list(report, cached)


def _nothing_to_suggest(project: str, window: float, ever: int) -> None:
    why = (f"the invocation log has no calls for project {project!r} yet" if ever == 0 else
           f"no calls in project {project!r} in the last {window:g} days ({ever} older call(s) in the log)")
    err.print(f"Nothing to suggest: {why}.", markup=False)
    err.print(f"  Serve the project to an agent (mcpctl serve --project {project}) and let it work, or "
              "widen --window.", markup=False)


def _print_command(command: str | None) -> None:
    if command:
        out.print("\nTo make these the favourites (changes nothing else in the project):", markup=False)
        write_stdout(safe(command, markup=False) + "\n")
    else:
        err.print("No tool qualifies: every used tool is flagged or below the floor (--min-calls, "
                  "--min-sessions).", markup=False)


def _print_suggest(project: str, s: Suggestions, *, window: float, since: float, command: str | None,
                   output: str, ever: int, floor: Floor, by: str | None, top: int) -> None:
    from mcpctl.presentation.favourites_table import suggest_parts, when

    period = f"over the last {window:g} days (since {when(since)})"
    usage = bd.usage_by(by, project=project, since=since) if by else None
    if output == "json":
        print_json({**fav.suggest_json(project, s, window, since, command),
                    **({"by": breakdown_section_json(by, usage)} if by and usage is not None else {})})
    elif not s.candidates:
        _nothing_to_suggest(project, window, ever)
    else:
        show(suggest_parts(project, s, period, floor, top))
        if by and usage is not None:
            out.print()
            bd.render_section(by, usage, period)
        _print_command(command)


def _apply_suggested(project: str, suggested: list[str], before: CachedCatalogue) -> None:
    """`suggest --apply`: run the very `favourites set` line it printed, show the change and its cost."""
    result = fav.set_favourites_of(the_store(), project, suggested)
    if result.changed:
        diff = fav.spec_diff(result.before, result.after, f"project/{project}")
        err.print("".join(safe(line, markup=False) + "\n" for line in diff.splitlines()), markup=False, end="")
        _report_cost(project, before)
    write_stdout(f"project/{project} {'configured' if result.changed else 'unchanged'}\n")


# -- commands ------------------------------------------------------------------------------------------


def register(app: typer.Typer) -> None:
    favourites_app = typer.Typer(help="A project's favourite tools: list, pin, unpin, and suggest them from real use.",
                                 no_args_is_help=True)

    @favourites_app.command("list")
    @cli_errors
    def list_cmd(
        project: Project,
        output: Annotated[str, output_option(("table", "json", "yaml"))] = "table",
    ) -> None:
        """Exactly what the gateway presents: favourites (★, presented name, state and why not listed), the
        count under all/, and the instruction text."""
        from ._listing import listed_catalogue

        check_format(output, ("table", "json", "yaml"))
        cached, _ = listed_catalogue(project)   # never-listed servers listed now, as the gateway's first start would
        _print_list(fav.favourites_report(cached, project), cached, output)

    @favourites_app.command("add")
    @cli_errors
    def add_cmd(
        project: Project,
        ids: _Ids,
        max_favourites: Annotated[int | None, typer.Option("--max-favourites", help="Also set maxFavourites (1-200).")] = None,
    ) -> None:
        """Pin tools as favourites (appended in order). Turns the favourite index on unless the project
        turned it off explicitly."""
        result, notes = fav.pin(the_store(), project, ids, max_favourites)
        for w in result.warnings:
            warn(w)
        for note in notes:
            if "turned on" in note:
                err.print(note, markup=False)
            else:
                warn(note)
        _warn_unknown(project, ids)
        write_stdout(f"project/{project} {'configured' if result.changed else 'unchanged'}\n")

    @favourites_app.command("remove")
    @cli_errors
    def remove_cmd(project: Project, ids: _Pinned) -> None:
        """Unpin favourites."""
        result, not_pinned = fav.unpin(the_store(), project, ids)
        for ident in not_pinned:
            warn(f"{ident!r} is not pinned in project {project!r}")
        write_stdout(f"project/{project} {'configured' if result.changed else 'unchanged'}\n")

    @favourites_app.command("set")
    @cli_errors
    def set_cmd(project: Project, ids: _Ids) -> None:
        """Make exactly these tools the favourites, in this order (the line `favourites suggest` prints).
        Turns the favourite index on; changes nothing else in the project."""
        result = fav.set_favourites_of(the_store(), project, ids)
        for w in result.warnings:
            warn(w)
        _warn_unknown(project, ids)
        write_stdout(f"project/{project} {'configured' if result.changed else 'unchanged'}\n")

    @favourites_app.command("suggest")
    @cli_errors
    def suggest_cmd(
        project: Project,
        top: Annotated[int, typer.Option("--top", "-n", min=1, max=200, help="How many favourites to suggest.")] = 20,
        window: Annotated[float, typer.Option("--window", min=0.001, help="Days of the invocation log to count.")] = 30.0,
        apply: Annotated[bool, typer.Option("--apply", help="Show the change and write it.")] = False,
        output: Annotated[str, output_option(("table", "json"))] = "table",
        min_calls: Annotated[int, typer.Option("--min-calls", min=1, help="Suggest only tools called at least "
                                               "this often in the window.")] = DEFAULT_FLOOR.calls,
        min_sessions: Annotated[int, typer.Option("--min-sessions", min=1, help="... and in at least this many "
                                                  "sessions.")] = DEFAULT_FLOOR.sessions,
        by: Annotated[str | None, typer.Option("--by", help=bd.by_option_help("Also the window's calls"))] = None,
    ) -> None:
        """Suggest favourites from the invocation log: tools ranked by calls (every presented form counted as
        its canonical id), with distinct sessions, error rate and last use; tools that mostly fail are flagged,
        not suggested. Ends with a ready-to-run `mcpctl favourites set` line (what --apply runs)."""
        check_format(output, ("table", "json"))
        bd.check_by(by)
        since = _now() - window * 86400.0
        floor = Floor(min_calls, min_sessions)
        from ._common import invocation_log

        with invocation_log() as log:
            s, before, ever = fav.suggestions(project, the_store(), the_cache(), log, top, since, floor)
        command = fav.set_command(project, s.suggested) if s.suggested else None
        _print_suggest(project, s, window=window, since=since, command=command, output=output, ever=ever,
                       floor=floor, by=by, top=top)
        if apply and s.suggested:
            _apply_suggested(project, s.suggested, before)

    app.add_typer(favourites_app, name="favourites", rich_help_panel="Gateway")
