"""`mcpctl logs`: read the invocation log (one row per tool call the gateway routed).

    mcpctl logs [--project P] [--since 1h|30m|2d|ISO-8601] [--tool GLOB] [--limit N] [-o table|json] [-f]
    mcpctl logs --by credential|host [--project P] [--since 30d]    calls per token name / gateway host
    mcpctl logs path      the database file
    mcpctl logs status    rows, size, oldest and newest call
    mcpctl logs stats     per tool: calls, errors, p50/p95 latency, last call
    mcpctl logs backup FILE / mcpctl logs prune --older-than 90d

The times and JSON shapes are `audit.formats`'s, the tables `presentation.log_tables`'s; this module
parses options and prints them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpctl.audit import formats as fmt

from ._common import (
    cli_errors,
    complete_projects,
    err,
    invocation_log,
    json_text,
    out,
    print_json,
    safe,
    write_stdout,
)

if TYPE_CHECKING:
    from mcpctl.audit.log import LogSummary, ToolStats

_LOG_FORMATS = ("table", "json")


def _time_option(value: str | None, flag: str) -> float | None:
    if value is None:
        return None
    try:
        return fmt.parse_time(value)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint=f"'{flag}'") from None


def _follow(filters: dict[str, Any], limit: int, output: str, interval: float, max_polls: int | None) -> None:
    """Print the newest `limit` calls, then every new one in insertion order until interrupted."""
    def emit(records: list[Any]) -> None:
        if output == "json":
            write_stdout("".join(json_text(fmt.record_json(r), indent=None) + "\n" for r in records))
        else:
            write_stdout("".join(safe(fmt.record_line(r), markup=False) + "\n" for r in records))

    with invocation_log() as log:
        try:
            for records in fmt.follow(log, filters, limit, interval, max_polls):
                emit(records)
        except KeyboardInterrupt:
            pass


def _breakdown(by: str, filters: dict[str, Any], output: str) -> None:
    """`mcpctl logs --by credential|host|...`: calls per value of that column (`cli/_breakdown.py`)."""
    from . import _breakdown as bd

    bd.check_by(by)
    rows = bd.usage_by(by, project=filters["project"], since=filters["since"], until=filters["until"])
    if output == "json":
        print_json(fmt.breakdown_json(rows))
    else:
        bd.render(by, rows)


def _check_format(output: str) -> None:
    if output not in _LOG_FORMATS:
        raise typer.BadParameter(f"{output!r} is not one of: table, json", param_hint="'-o' / '--output'")


def _print_calls(records: list[Any], output: str, limit: int, *, filtered: bool) -> None:
    """`records`: the newest `limit` calls and one more when there are older ones (left out here)."""
    truncated = bool(limit) and len(records) > limit
    if truncated:
        records = records[1:]
    if output == "json":
        print_json([fmt.record_json(r) for r in records])
        return
    if not records:
        err.print("No calls logged" + (" matching those filters." if filtered
                                       else " yet. Start a gateway: mcpctl serve --project P"))
        return
    from mcpctl.presentation.log_tables import calls_table

    out.print(calls_table(records))
    if truncated:
        err.print(f"(the newest {limit} calls; older ones left out: --limit 0 shows all, --since narrows)")


def _print_status(s: LogSummary, output: str) -> None:
    if output == "json":
        print_json(fmt.summary_json(s))
        return
    from mcpctl.presentation.log_tables import status_table

    out.print(status_table(s))


def _print_stats(stats: list[ToolStats], output: str, *, filtered: bool) -> None:
    if output == "json":
        print_json(fmt.stats_json(stats))
        return
    if not stats:
        err.print("No calls logged" + (" matching those filters." if filtered else " yet."))
        return
    from mcpctl.presentation.log_tables import stats_table

    out.print(stats_table(stats))


def register(app: typer.Typer) -> None:
    logs_app = typer.Typer(
        name="logs",
        help="Show the invocation log: one row per tool call the gateway routed "
        "(never arguments or results).",
        invoke_without_command=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.add_typer(logs_app, rich_help_panel="Evidence")

    @logs_app.callback()
    @cli_errors
    def logs(
        ctx: typer.Context,
        project: Annotated[str | None, typer.Option("--project", "-p", help="Only calls in this project.",
                                                    autocompletion=complete_projects)] = None,
        since: Annotated[str | None, typer.Option(
            "--since", help="Only calls since: 30m, 1h, 2d, 1w, or an ISO-8601 time.")] = None,
        until: Annotated[str | None, typer.Option(
            "--until", help="Only calls before: a duration ago or an ISO-8601 time.")] = None,
        tool: Annotated[str | None, typer.Option(
            "--tool", "-t", help="Only calls to tools matching this glob (canonical id, e.g. 'github/*').")] = None,
        outcome: Annotated[str | None, typer.Option(
            "--outcome", help="Only this outcome: ok|tool_error|protocol_error|timeout|upstream_down|denied|limited.")] = None,
        limit: Annotated[int, typer.Option("--limit", "-n", min=0,
                                           help="Show the newest N calls (0: all).")] = 100,
        output: Annotated[str, typer.Option("-o", "--output", help="table|json")] = "table",
        follow: Annotated[bool, typer.Option(
            "--follow", "-f", help="Keep printing new calls as gateways record them (Ctrl-C to stop); "
            "with -o json, one object per line.")] = False,
        interval: Annotated[float, typer.Option("--interval", min=0.05, hidden=True)] = 0.5,
        max_polls: Annotated[int | None, typer.Option("--max-polls", min=0, hidden=True)] = None,
        by: Annotated[str | None, typer.Option(
            "--by", help="Count calls per credential|host|project|client_name|profile|outcome instead: "
            "calls, share, errors, last call.")] = None,
    ) -> None:
        """Show logged tool calls, oldest first (the newest --limit of them)."""
        if ctx.invoked_subcommand is not None:
            return
        from mcpctl.audit.log import OUTCOMES

        _check_format(output)
        if outcome is not None and outcome not in OUTCOMES:
            raise typer.BadParameter(f"{outcome!r} is not one of: {', '.join(OUTCOMES)}",
                                     param_hint="'--outcome'")
        since_ts = _time_option(since, "--since")
        until_ts = _time_option(until, "--until")
        filters: dict[str, Any] = {"project": project, "since": since_ts, "until": until_ts, "tool_glob": tool,
                                   "outcome": outcome}
        if by is not None:
            _breakdown(by, filters, output)
            return
        if follow:
            _follow(filters, limit, output, interval, max_polls)
            return
        with invocation_log() as log:
            # one extra row tells whether older calls were left out
            records = log.query(**filters, limit=limit + 1 if limit else None)
        _print_calls(records, output, limit, filtered=any((project, since, until, tool, outcome)))

    @logs_app.command("path")
    @cli_errors
    def logs_path() -> None:
        """Print the path of the invocation log database."""
        from mcpctl import paths

        write_stdout(f"{paths.invocation_log_path()}\n")

    @logs_app.command("status")
    @cli_errors
    def logs_status(
        output: Annotated[str, typer.Option("-o", "--output", help="table|json")] = "table",
    ) -> None:
        """Rows, size on disk, oldest and newest call, applied migrations."""
        _check_format(output)
        with invocation_log() as log:
            s = log.summary()
        _print_status(s, output)

    @logs_app.command("stats")
    @cli_errors
    def logs_stats(
        project: Annotated[str | None, typer.Option("--project", "-p", help="Only calls in this project.",
                                                    autocompletion=complete_projects)] = None,
        since: Annotated[str | None, typer.Option(
            "--since", help="Only calls since: 30m, 1h, 2d, 1w, or an ISO-8601 time.")] = None,
        output: Annotated[str, typer.Option("-o", "--output", help="table|json")] = "table",
    ) -> None:
        """Per tool: calls, errors, error rate, p50/p95 latency and the last call. Most called first."""
        _check_format(output)
        since_ts = _time_option(since, "--since")
        with invocation_log() as log:
            stats = log.tool_stats(project=project, since=since_ts)
        _print_stats(stats, output, filtered=bool(project or since))

    @logs_app.command("backup")
    @cli_errors
    def logs_backup(
        dest: Annotated[Path, typer.Argument(help="The new SQLite file to write (must not exist).")],
    ) -> None:
        """Copy the invocation log to FILE, consistently, even while gateways are writing."""
        from mcpctl.errors import MCPCtlError

        dest = dest.expanduser()
        with invocation_log() as log:
            try:
                rows = log.backup(dest)   # the rows of the copy: gateways may have written more since
            except FileExistsError:
                raise MCPCtlError(f"{dest} already exists", hint="choose a new file name") from None
            except OSError as e:
                raise MCPCtlError(f"cannot write {dest}: {e.strerror or e}") from None
        err.print(f"Backed up {rows} rows to {dest}")

    @logs_app.command("prune")
    @cli_errors
    def logs_prune(
        older_than: Annotated[str, typer.Option(
            "--older-than", help="Delete calls older than this: 90d, 12w, or an ISO-8601 time.")],
        project: Annotated[str | None, typer.Option("--project", "-p", help="Only in this project.",
                                                    autocompletion=complete_projects)] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Only count what would be deleted.")] = False,
    ) -> None:
        """Delete old calls from the invocation log (favourites and evaluation use what is left)."""
        cutoff = _time_option(older_than, "--older-than")
        assert cutoff is not None
        with invocation_log() as log:
            if dry_run:
                n = log.count(project, until=cutoff)
                write_stdout(f"{n} calls older than {fmt.local_time(cutoff)} would be deleted\n")
                return
            n = log.delete_before(cutoff, project=project)
        write_stdout(f"{n} calls older than {fmt.local_time(cutoff)} deleted\n")
