"""`mcpctl tools changes|approve --project P`: tool definitions that differ from their pins (`catalogue.pins`).

`changes` compares each server's cached listing (`--refresh`: listed now) with the definitions
pinned at its first listing and prints each change as a unified diff; `approve` accepts the
named changes (`SERVER/TOOL`, or `--all`), so the pins become what the servers list now. A listed
definition carrying what tool poisoning uses (`_flags`) is flagged beside its diff, and approving
it takes `--yes` (refused otherwise, naming the flags).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import (
    Project,
    check_format,
    cli_errors,
    out,
    output_option,
    print_json,
    safe,
    the_store,
    write_stdout,
)

if TYPE_CHECKING:
    pass


def _changes(project: str, refresh: bool) -> tuple[list[str], dict[str, list[dict[str, Any]]]]:
    """The project's servers and each one's cached listing (listed first with `refresh`)."""
    from mcpctl.presentation.catalogue import cached_catalogue

    from ._common import the_cache
    from ._listing import list_project_now

    cache = the_cache()
    servers = list(cached_catalogue(project, the_store(), cache).project.servers)
    if refresh:
        list_project_now(project, lambda _n: True, "listing servers")
    return servers, {s: cache.read_server_tools(s) or [] for s in servers}


def register(tools_app: typer.Typer) -> None:
    @tools_app.command("changes")
    @cli_errors
    def changes_cmd(
        project: Project,
        output: Annotated[str, output_option(("table", "json"))] = "table",
        refresh: Annotated[bool, typer.Option("--refresh", help="List the servers now (otherwise the cached "
                                              "listing).")] = False,
    ) -> None:
        """Tool definitions that differ from those pinned when each server was first listed, as diffs."""
        from mcpctl.catalogue.pins import changes
        from mcpctl.catalogue.poison.flags import MARK, lines
        from mcpctl.presentation.tools import flags_of

        check_format(output, ("table", "json"))
        servers, listings = _changes(project, refresh)
        found = [c for s in servers for c in changes(s, listings[s])]
        flagged = flags_of((c.id, c.after) for c in found)
        if output == "json":
            from mcpctl.catalogue.approval import change_json

            print_json([change_json(c, flagged.get(c.id, [])) for c in found])
            return
        if not found:
            write_stdout(f"No changes: every tool of project {project} is as pinned.\n")
            return
        for c in found:
            out.print(safe(f"{c.id}: {c.kind}", markup=False), style="bold", markup=False)
            write_stdout("".join(safe(line, markup=False) + "\n" for line in c.diff().splitlines()))
            if c.id in flagged:         # beside its diff: what the listed definition carries
                write_stdout(safe(f"{MARK} the listed definition carries what tool poisoning uses:",
                                  markup=False) + "\n")
                write_stdout("".join(safe(line, markup=False) + "\n" for line in lines({c.id: flagged[c.id]})))
        write_stdout(f"{len(found)} change(s); accept with: mcpctl tools approve --project {project} "
                     f"{' '.join(dict.fromkeys(c.id for c in found))} (or --all)"
                     + (f"; {len(flagged)} flagged ({MARK}): approving them takes --yes" if flagged else "")
                     + "\n")

    @tools_app.command("approve")
    @cli_errors
    def approve_cmd(
        project: Project,
        ids: Annotated[list[str] | None, typer.Argument(
            help="SERVER/TOOL changes to accept (globs allowed: 'dyn/*').")] = None,
        all_: Annotated[bool, typer.Option("--all", help="Accept every change of the project.")] = False,
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve changes whose listed definition carries "
                                          "what tool poisoning uses (refused without it, naming the flags).")] = False,
    ) -> None:
        """Accept changed, new or removed tool definitions: their pins become what the servers list now."""
        from mcpctl.catalogue.approval import chosen_changes, flagged_changes, flagged_refusal
        from mcpctl.catalogue.pins import approve
        from mcpctl.catalogue.poison.flags import MARK

        servers, listings = _changes(project, False)
        chosen = chosen_changes(project, servers, listings, ids or [], all_)
        flagged = flagged_changes(servers, listings, chosen)
        if flagged and not yes:
            raise flagged_refusal(project, flagged)
        done = [c for s in servers if s in chosen for c in approve(s, listings[s], chosen[s])]
        for c in done:
            mark = f" ({MARK} flagged: {'; '.join(f.why for f in flagged[c.id])})" if c.id in flagged else ""
            write_stdout(safe(f"{c.id}: {c.kind}, approved{mark}", markup=False) + "\n")
        if not done:
            write_stdout(f"Nothing to approve: every tool of project {project} is as pinned.\n")
