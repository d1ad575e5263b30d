"""`mcpctl favourites list|add|remove|suggest --project P`: a project's favourite index.

`list` shows exactly what the gateway presents (the same pipeline, built from the catalogue
cache); `add`/`remove` pin and unpin tools and `set` replaces them (validated like `apply`);
`suggest` ranks tools by their calls in the invocation log and prints a ready-to-run
`mcpctl favourites set` line, which changes nothing but the favourites (`--by credential|host`
adds the window's calls per token name or gateway host: `cli/_breakdown.py`). `suggest --apply` runs
that very command (`set_favourites_of`), so the line and `--apply` cannot drift apart.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpctl.catalogue.favourites import DEFAULT_FLOOR, Floor

from . import _breakdown as bd
from ._common import (
    Project,
    check_format,
    cli_errors,
    err,
    out,
    output_option,
    print_json,
    safe,
    the_store,
    warn,
    write_stdout,
)
from .create import complete_tool_ids

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


def favourites_report(cached: CachedCatalogue, project_name: str) -> dict[str, Any]:
    """What the gateway presents of the project's favourites (the JSON/YAML shape of `list`)."""
    from mcpctl.presentation.names import ALL

    project = cached.project
    view = cached.view()
    table = view.table
    pinned = list(project.favourite_index.tools)
    if project.favourite_index.enabled:
        rows = [{"id": f.canonical_id, "pinned": True, "name": f.name,
                 "state": "listed" if f.listed else "pending" if f.pending else "not listed",
                 "reason": f.reason, "description": f.description} for f in view.favourites]
    else:
        rows = [{"id": cid, "pinned": True, "name": None, "state": "not presented",
                 "reason": "the favourite index is off (flat presentation)", "description": ""} for cid in pinned]
    listed = set(view.listed_names)
    under_all = [t for t in view.searchable if table.name(ALL, t.canonical_id) is not None]
    return {
        "project": project_name,
        "presentation": project.presentation,
        "names": project.names.style,
        "maxFavourites": project.favourite_index.max_favourites,
        "gate": project.gate.enabled,
        "favourites": rows,
        "all": {"count": len(under_all), "pattern": table.namer.pattern(ALL) if under_all else None,
                "listed": any(table.name(ALL, t.canonical_id) in listed for t in under_all)},
        "instructions": cached.catalogue.instructions,
    }


def _render_list(report: dict[str, Any], cached: CachedCatalogue) -> None:
    from rich.table import Table

    rows = report["favourites"]
    out.print(f"project/{report['project']}: {report['presentation']} presentation, {report['names']} names, "
              f"{len(rows)} of at most {report['maxFavourites']} favourites pinned"
              + (", session gate on (favourites appear after begin_session)" if report["gate"] else ""),
              markup=False)
    if rows:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("", "#", "CANONICAL ID", "PRESENTED NAME", "STATE", "WHY NOT LISTED / DESCRIPTION"):
            table.add_column(col, no_wrap=col != "WHY NOT LISTED / DESCRIPTION",
                             overflow="fold" if col.startswith("WHY") else "ignore")
        for i, r in enumerate(rows, 1):
            detail = r["reason"] or " ".join(r["description"].split())[:90]
            table.add_row("★", str(i), safe(r["id"]), safe(r["name"] or "-"), r["state"], safe(detail))
        out.print(table)
    else:
        out.print("No favourites pinned. Pin some with: mcpctl favourites add --project "
                  f"{report['project']} SERVER/TOOL …, or let the log suggest them: mcpctl favourites suggest "
                  f"--project {report['project']}", markup=False)
    a = report["all"]
    if a["count"]:
        how = "listed" if a["listed"] else "not listed: reachable through search_tools and call_tool"
        out.print(f"Under all/: {a['count']} tools as {a['pattern']} ({how})", markup=False)
    out.print("Instructions sent to the client:", markup=False)
    out.print(f"  {safe(report['instructions'], markup=False)}", markup=False)
    for server in cached.unlisted:
        warn(f"server {server!r} has not been listed yet: its tools are unknown "
             f"(mcpctl tools list --project {report['project']} --refresh)")


# -- add / remove --------------------------------------------------------------------------------------


def _check_ids(ids: list[str]) -> None:
    from mcpctl.errors import InvalidResource
    from mcpctl.resources.kinds import check_favourite_id

    for ident in ids:
        problem = check_favourite_id(ident)
        if problem:
            raise InvalidResource(f"SERVER/TOOL: {problem}")


def _flagged(message: str) -> str:
    """Validation speaks in manifest paths; here the user typed ids and flags."""
    return (message.split(": ", 1)[1] if message.startswith("favourites ") and ": " in message else message) \
        .replace("spec.favouriteIndex.maxFavourites", "maxFavourites (--max-favourites)") \
        .replace("spec.favouriteIndex.tools", "the favourites")


def _edit(project: str, change: Any, verb: str) -> Any:
    from mcpctl.errors import InvalidResource
    from mcpctl.resources.edit import edit_spec


    try:
        return edit_spec(the_store(), "Project", project, change, where=f"favourites {verb}")
    except InvalidResource as e:
        raise InvalidResource(f"project {project!r}: {_flagged(e.message)}", hint=e.hint) from None


def set_favourites_of(project: str, ids: list[str], max_favourites: int | None = None) -> Any:
    """`favourites set` and `suggest --apply`: `ids` become the project's favourites (the index
    on); nothing else in the spec changes. Returns the store's edit result."""
    from mcpctl.catalogue import favourites as fv

    _check_ids(ids)
    return _edit(project, lambda spec: fv.set_favourites(spec, ids, max_favourites), "set")


def set_command(project: str, ids: list[str]) -> str:
    """The shell line that runs `set_favourites_of(project, ids)`, each word quoted for a POSIX shell."""
    return shlex.join(["mcpctl", "favourites", "set", "--project", project, *ids])


def _warn_unknown(project: str, ids: list[str]) -> None:
    from mcpctl.catalogue.idcheck import check_against_cache

    from ._common import the_cache

    servers = list((the_store().get("Project", project).get("spec") or {}).get("servers") or [])
    for finding in check_against_cache(ids, servers, the_cache(), where=f"project {project!r}"):
        warn(f"{finding.message} (a favourite is presented only once its server lists it)")


# -- suggest -------------------------------------------------------------------------------------------


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def suggestions(project: str, top: int, since: float, floor: Floor | None = None
                ) -> tuple[Suggestions, CachedCatalogue, int]:
    """Favourites suggested from the calls of `project` since `since` (unix seconds), the cached
    catalogue they were judged against, and (when there were none) how many calls the log holds."""
    from mcpctl.catalogue import favourites as fv
    from mcpctl.presentation.catalogue import cached_catalogue
    from mcpctl.presentation.view import Refusal

    from ._common import invocation_log, the_cache

    cached = cached_catalogue(project, the_store(), the_cache())
    with invocation_log() as log:
        rows = log.usage(project, since=since)
        ever = log.count(project) if not rows else -1
    view = cached.view()

    def resolve(name: str) -> str | None:
        hit = view.table.lookup(name)
        return hit[1].canonical_id if hit is not None else None

    def ineligible(cid: str) -> str | None:
        server = cid.split("/", 1)[0]
        if server not in cached.project.servers:
            return f"server {server!r} is no longer in the project"
        hit = view.resolve(cid)
        if hit is None:
            return "not in the catalogue now" if server not in cached.unlisted else "server not listed yet"
        if isinstance(hit, Refusal):
            return "disabled in the project" if hit.error_class == "ToolDisabled" else hit.message
        return None

    pinned = list(cached.project.favourite_index.tools)
    return fv.suggest(rows, pinned=pinned, top=top, resolve=resolve, ineligible=ineligible,
                      floor=floor or fv.DEFAULT_FLOOR), cached, ever


def _suggest_json(project: str, s: Suggestions, window: float, since: float, command: str | None) -> dict[str, Any]:
    return {
        "project": project, "windowDays": window, "since": since, "calls": s.calls, "sessions": s.sessions,
        "suggested": s.suggested,
        "tools": [{"id": c.use.canonical_id, "calls": c.use.calls, "sessions": c.use.sessions,
                   "errors": c.use.errors, "errorRate": round(c.use.error_rate, 4), "lastUse": c.use.last_ts,
                   "pinned": c.pinned, "suggested": c.suggested, "flag": c.flag, "belowFloor": c.below,
                   "names": list(c.use.names)}
                  for c in s.candidates],
        "pinnedUnused": s.pinned_unused,
        "command": command,
    }


def _list_cost(cached: CachedCatalogue) -> tuple[tuple[int, int], tuple[int, int]]:
    """(listed, ≈tokens) of the project's tools/list as presented, and of the flat list."""
    from mcpctl.catalogue.tokens import definition_text, token_counter
    from mcpctl.presentation.surface import FLAT, mode_catalogues

    count = token_counter().count
    cats = mode_catalogues(cached.catalogue)
    costs = []
    for cat in (cats[cached.project.presentation], cats[FLAT]):
        tools = cat.view().tools
        costs.append((len(tools), sum(count(definition_text(t)) for t in tools)))
    return costs[0], costs[1]


def _report_cost(project: str, before: CachedCatalogue) -> None:
    """What the change did to the list's size, and a warning when favourites cost more than they
    save (each favourite is listed in full: past a point the list outgrows the flat one)."""
    from mcpctl.presentation.catalogue import cached_catalogue

    from ._common import the_cache

    (n0, t0), _ = _list_cost(before)
    after = cached_catalogue(project, the_store(), the_cache())
    (n1, t1), (nf, tf) = _list_cost(after)
    mode = after.project.presentation
    err.print(f"{mode} list: {n0} tools ≈{t0:,} tokens -> {n1} tools ≈{t1:,} tokens (flat: {nf} tools "
              f"≈{tf:,} tokens)", markup=False)
    if mode != "flat" and t1 > tf:
        warn(f"the favourites now cost more than they save: the {mode} list is {t1 / tf:.0%} of flat; pin fewer "
             f"(--top, or mcpctl favourites remove --project {project} …) or present deferred")


def _spec_diff(before: dict[str, Any], after: dict[str, Any], ref: str) -> str:
    import difflib

    from mcpctl.resources.yamlio import to_yaml

    return "".join(difflib.unified_diff(to_yaml({"spec": before.get("spec", {})}).splitlines(keepends=True),
                                        to_yaml({"spec": after.get("spec", {})}).splitlines(keepends=True),
                                        fromfile=f"live/{ref}", tofile=f"suggested/{ref}"))


def _pinning(project: str, ids: list[str], max_favourites: int | None,
             notes: list[str]) -> Callable[[dict[str, Any]], None]:
    """The spec edit of `favourites add`: pin `ids`, turn the index on when the project left it
    unsaid; what the user should know goes to `notes`."""
    from mcpctl.catalogue import favourites as fv

    def change(spec: dict[str, Any]) -> None:
        fv.pin(spec, ids)
        fav = spec["favouriteIndex"]
        if max_favourites is not None:
            fav["maxFavourites"] = max_favourites
        if spec.get("presentation") is None and fav.get("enabled") is None:
            fav["enabled"] = True
            notes.append("favourite index turned on (favourite-index presentation)")
        elif spec.get("presentation") == "flat" or fav.get("enabled") is False:
            notes.append("the favourite index is off in this project, so favourites are not presented: "
                         "remove spec.presentation: flat / set favouriteIndex.enabled: true "
                         f"(mcpctl edit project {project})")

    return change


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
    from ._suggest import render_suggest

    period = f"over the last {window:g} days (since {_when(since)})"
    usage = bd.usage_by(by, project=project, since=since) if by else None
    if output == "json":
        print_json({**_suggest_json(project, s, window, since, command),
                    **({"by": bd.section_json(by, usage)} if by and usage is not None else {})})
    elif not s.candidates:
        _nothing_to_suggest(project, window, ever)
    else:
        render_suggest(project, s, period, floor, top)
        if by and usage is not None:
            out.print()
            bd.render_section(by, usage, period)
        _print_command(command)


def _apply_suggested(project: str, suggested: list[str], before: CachedCatalogue) -> None:
    """`suggest --apply`: run the very `favourites set` line it printed, show the change and its cost."""
    result = set_favourites_of(project, suggested)
    if result.changed:
        diff = _spec_diff(result.before, result.after, f"project/{project}")
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
        _print_list(favourites_report(cached, project), cached, output)

    @favourites_app.command("add")
    @cli_errors
    def add_cmd(
        project: Project,
        ids: _Ids,
        max_favourites: Annotated[int | None, typer.Option("--max-favourites", help="Also set maxFavourites (1-200).")] = None,
    ) -> None:
        """Pin tools as favourites (appended in order). Turns the favourite index on unless the project
        turned it off explicitly."""
        _check_ids(ids)
        notes: list[str] = []
        result = _edit(project, _pinning(project, ids, max_favourites, notes), "add")
        for w in result.warnings:
            warn(w)
        for note in notes if result.changed else []:
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
        from mcpctl.catalogue import favourites as fv

        _check_ids(ids)
        removed: list[str] = []
        result = _edit(project, lambda spec: removed.extend(fv.unpin(spec, ids)), "remove")
        for ident in ids:
            if ident not in removed:
                warn(f"{ident!r} is not pinned in project {project!r}")
        write_stdout(f"project/{project} {'configured' if result.changed else 'unchanged'}\n")

    @favourites_app.command("set")
    @cli_errors
    def set_cmd(project: Project, ids: _Ids) -> None:
        """Make exactly these tools the favourites, in this order (the line `favourites suggest` prints).
        Turns the favourite index on; changes nothing else in the project."""
        result = set_favourites_of(project, ids)
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
        s, before, ever = suggestions(project, top, since, floor)
        command = set_command(project, s.suggested) if s.suggested else None
        _print_suggest(project, s, window=window, since=since, command=command, output=output, ever=ever,
                       floor=floor, by=by, top=top)
        if apply and s.suggested:
            _apply_suggested(project, s.suggested, before)

    app.add_typer(favourites_app, name="favourites", rich_help_panel="Gateway")
