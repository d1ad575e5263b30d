"""`mcpctl tools list|enable|disable --project P`: a project's catalogue and its curation (the rows
and the edit are `presentation.tools`'s; this module renders)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpctl.errors import EXIT_UPSTREAM

from . import _flags
from ._common import (
    Project,
    check_format,
    cli_errors,
    complete_tool_ids,
    err,
    out,
    output_option,
    print_json,
    the_cache,
    warn,
    write_stdout,
)

_FORMATS = ("table", "wide", "json", "yaml", "name")
_Ids = Annotated[list[str], typer.Argument(help="Canonical ids server/tool, or globs (github/delete_*).",
                                            autocompletion=complete_tool_ids)]
_Force = Annotated[bool, typer.Option("--force", help="ResourceStore ids or globs that match no tool the project's servers "
                                      "last listed (they are refused otherwise).")]


def _rows(project_name: str, refresh: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """The catalogue's rows (`presentation.tools.tool_rows`) after listing the servers never listed
    (all of them with `refresh`); with the servers that failed."""
    from mcpctl.presentation.tools import tool_rows

    from ._listing import listed_catalogue, warn_unservable

    cached, failed = listed_catalogue(project_name, refresh=refresh, progress=True)
    failed = warn_unservable(cached, failed)
    return tool_rows(cached, the_cache()), failed


def _say_flags(project: str, rows: list[dict[str, Any]]) -> None:
    """Below the table (stderr): each flagged tool's marks, and what to do (`_flags`)."""
    from mcpctl.catalogue.poison.flags import MARK, headline
    from mcpctl.presentation.tools_table import flagged

    found = flagged(rows)
    ids = " ".join(f"'{cid}'" for cid in found)
    said = headline(len(found), "tool description", "tool descriptions")
    _flags.say(found, f"{said} ({MARK} flagged: not blocked)",
               f"read them; keep them from the agent with: mcpctl tools disable --project {project} {ids}")


def _edit_and_report(project: str, ids: list[str], *, enable: bool, force: bool) -> None:
    from mcpctl.presentation.tools import curate

    from ._common import the_cache, the_store

    changed = curate(the_store(), the_cache(), project, ids, enable=enable, force=force, warn=warn)
    out.print(f"project/{project} {'configured' if changed else 'unchanged'}", markup=False)


def _print_rows(project: str, rows: list[dict[str, Any]], output: str, failed: list[str]) -> None:
    if output == "json":
        print_json(rows)
    elif output == "yaml":
        from mcpctl.resources import yamlio

        write_stdout(yamlio.to_yaml(rows))
    elif output == "name":
        write_stdout("".join(r["canonicalId"] + "\n" for r in rows))
    else:
        from mcpctl.presentation.tools_table import tools_table

        if rows:
            out.print(tools_table(rows, wide=output == "wide"))
            _say_flags(project, rows)
        elif not failed:
            err.print(f"Project {project!r} has no tools: its servers list none.", markup=False)


def register(app: typer.Typer) -> None:
    tools_app = typer.Typer(help="A project's tool catalogue: list it, enable or disable tools.", no_args_is_help=True)

    @tools_app.command("list")
    @cli_errors
    def list_cmd(
        project: Project,
        output: Annotated[str, output_option(("table", "wide", "json", "yaml", "name"))] = "table",
        refresh: Annotated[bool, typer.Option("--refresh", help="Connect to the servers and list them now "
                                              "(otherwise the cached listing is shown).")] = False,
    ) -> None:
        """The project's catalogue: server, canonical id, presented name, state and hints (-o wide: what
        search reads each tool as doing, reads, records, changes, deletes or runs, and from what)."""
        check_format(output, _FORMATS)
        rows, failed = _rows(project, refresh)
        _print_rows(project, rows, output, failed)
        if failed:      # each failure was reported once, above
            raise typer.Exit(EXIT_UPSTREAM)

    @tools_app.command("enable")
    @cli_errors
    def enable_cmd(project: Project, ids: _Ids, force: _Force = False) -> None:
        """Enable tools: drop an exact entry from tools.disabled, else add to tools.enabled."""
        _edit_and_report(project, ids, enable=True, force=force)

    @tools_app.command("disable")
    @cli_errors
    def disable_cmd(project: Project, ids: _Ids, force: _Force = False) -> None:
        """Disable tools: drop an exact entry from tools.enabled, else add to tools.disabled."""
        _edit_and_report(project, ids, enable=False, force=force)

    from mcpctl.cli import tools_override, tools_pins

    tools_pins.register(tools_app)
    tools_override.register(tools_app)
    try:
        from mcpctl.cli import tools_search

        tools_search.register(tools_app)
    except ModuleNotFoundError:
        pass
    app.add_typer(tools_app, name="tools", rich_help_panel="Gateway")
