"""`mcpctl doctor [--project P]`: check the install and every server, say what to fix.

Progress on stderr, results on stdout (`-o json` for scripts); exit 1 when a check failed.
Core: `mcpctl.clients.doctor`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._common import (
    check_format,
    cli_errors,
    complete_projects,
    err,
    out,
    print_json,
    safe,
    the_cache,
    the_store,
)

if TYPE_CHECKING:
    from mcpctl.clients.doctor_report import DoctorReport

_MARKS = {"ok": ("✔", "green"), "info": ("·", "cyan"), "warn": ("!", "yellow"), "fail": ("✘", "red")}


def render(report: DoctorReport) -> None:
    from rich.text import Text

    for scope in report.scopes():
        out.print(Text(safe(scope, markup=False), style="bold"))
        for c in (c for c in report.checks if c.scope == scope):
            mark, style = _MARKS[c.status]
            line = Text("  ")
            line.append(mark, style=style)
            line.append(f" {safe(c.message, markup=False)}")
            out.print(line)
            if c.hint and c.status in ("warn", "fail", "info"):
                out.print(Text(f"    → {safe(c.hint, markup=False)}", style="dim"))
    if report.problems or report.warnings:
        summary = f"{report.problems} problem(s), {report.warnings} warning(s): the → lines say what to do"
    else:
        summary = "no problems found"
    out.print(Text(summary, style="bold red" if report.problems else "bold yellow" if report.warnings else "bold green"))


def register(app: typer.Typer) -> None:
    @app.command("doctor", rich_help_panel="Getting started")
    @cli_errors
    def doctor(
        project: Annotated[str | None, typer.Option("--project", "-p", autocompletion=complete_projects,
                                                    help="Check this project and its servers only.")] = None,
        connect: Annotated[bool, typer.Option("--connect/--no-connect", help="Connect to each server and list "
                                              "it (within its connect timeout).")] = True,
        name: Annotated[str, typer.Option("--name", help="The gateway's entry name in the client (Claude Code "
                                          "prefixes tools with mcp__<name>__).")] = "mcpctl",
        tool_budget: Annotated[int, typer.Option("--tool-budget", help="Tokens one tool definition may take "
                                                 "(chars/4 estimate).")] = 1000,
        budget: Annotated[int, typer.Option("--budget", help="Tokens a project's whole tools/list may take "
                                            "(chars/4 estimate).")] = 10000,
        output: Annotated[str, typer.Option("-o", "--output", help="text|json")] = "text",
    ) -> None:
        """Check the install, every server and every project, and say what to fix.

        Servers: command on PATH, references, connect and list, protocol era, token sizes. Projects: names
        valid in Claude and Codex, tools/list size, semantic search. Exit 1 when a check failed.
        """
        check_format(output, ("text", "json"))
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        from mcpctl.clients.doctor import run_doctor

        progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                            TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                            console=err, transient=True, disable=not err.is_terminal)
        task = None

        def on_progress(server: str, done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = progress.add_task("connecting to servers", total=total)
            progress.update(task, completed=done, description=f"listed {server}")

        with progress:
            report = run_doctor(project, connect=connect, entry=name, tool_budget=tool_budget, budget=budget,
                                on_progress=on_progress, store=the_store(), cache=the_cache())
        if output == "json":
            print_json(report.to_json())
        else:
            render(report)
        if report.problems:
            raise typer.Exit(1)
