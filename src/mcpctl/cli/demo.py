"""`mcpctl demo`: the main job end to end on the bundled example servers.

Registers the example servers (notes, calc, textkit) and a `demo` project in the store, exactly
as examples/*.yaml declare them (three pinned favourites, favourite-index presentation, a
`writer` profile), starts the real gateway (`mcpctl serve --project demo`) as a subprocess,
connects to it with the official MCP client, lists and calls tools through it, and prints a
short report: the favourites listed first with the instruction the client received, the calls,
the invocation log rows the run produced, and the favourites `mcpctl favourites suggest` draws
from them. Only the report goes to stdout. The run itself is `mcpctl.demo`'s; this module prints.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from mcpctl import demo as demo_run
from mcpctl.demo import DEMO_FLOOR, DISABLED, EXAMPLE_SERVERS, PROJECT, Session, run_session

from ._common import cli_errors, err, out, show


def register_demo(store: Any) -> list[str]:
    """Register the demo's servers and project (`mcpctl.demo.register_demo`), warning on stderr."""
    registered, warnings = demo_run.register_demo(store)
    for w in warnings:
        err.print(f"[yellow]warning:[/yellow] {w}")
    return registered


def print_report(home_note: str, registered: list[str], s: Session, rows: list[Any], pairs: list[tuple[str, str]],
                 log_path: Path, suggested: tuple[Any, str | None] | None = None, kept: bool = True) -> None:
    from rich.markup import escape
    from rich.table import Table

    from mcpctl.presentation.log_tables import calls_table

    out.print(f"[bold]mcpctl demo[/bold]  {escape(home_note)}")
    out.print("\n[bold]1. Registered[/bold] the example servers and project 'demo'")
    for line in registered:
        out.print(f"   {escape(line)}")
    out.print(f"\n[bold]2. Started the gateway[/bold] ({escape(sys.executable)} -m mcpctl serve --project demo): "
              f"{escape(s.server)}, protocol {escape(s.protocol)}")
    favs = [t.name for t in s.tools if t.name.startswith("favourite")]
    rest = [t.name for t in s.tools if t.name.startswith("all")]
    out.print(f"\n[bold]3. The agent sees {len(s.tools)} tools[/bold]: {len(favs)} favourites first, mcpctl's "
              f"search_tools, then all {len(rest)} enabled tools under all__<server>__<tool> "
              f"({DISABLED} is disabled in the project)")
    out.print(f"   Instructions it received: {escape(s.instructions)}")
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    table.add_column("NAME")
    table.add_column("RO", justify="center")
    table.add_column("DESCRIPTION")
    for t in s.tools:
        ann = t.annotations
        ro = "-" if ann is None or ann.read_only_hint is None else ("yes" if ann.read_only_hint else "no")
        table.add_row(escape(t.name), ro, escape(demo_run.short(t.description or "", 70)))
    out.print(table)
    out.print("\n[bold]4. Calls through the gateway[/bold]")
    for step in s.steps:
        mark = "[green]✓[/green]" if step.ok else "[red]✗[/red]"
        out.print(f" {mark} {escape(step.title)}\n     → {escape(step.detail)}")
    out.print(f"\n[bold]5. Invocation log[/bold] ({escape(str(log_path))}): {len(rows)} rows from this run")
    if rows:
        out.print(calls_table(rows))
    for q, cid in pairs:
        out.print(escape(f"   search {q!r} was followed by a call to {cid}"))
    if suggested is not None:
        from mcpctl.presentation.favourites_table import suggest_parts

        out.print("\n[bold]6. Favourites from this run's calls[/bold] (mcpctl favourites suggest --project demo)")
        show(suggest_parts(PROJECT, suggested[0], "in this run", DEMO_FLOOR, 5))
        if suggested[1]:
            out.print("   To make them the favourites (nothing else changes):")
            out.print(f"   {escape(suggested[1])}")
    if kept:
        out.print("\nNext: [bold]mcpctl serve --project demo[/bold] from your agent's MCP config, "
                  "[bold]mcpctl favourites list --project demo[/bold], [bold]mcpctl logs --project demo[/bold]")
    else:
        out.print("\nNext: register your own servers (mcpctl create server NAME -- CMD …) and a project "
                  "(mcpctl create project P --server NAME --favourite NAME/TOOL), then mcpctl serve --project P")


def register(app: typer.Typer) -> None:
    @app.command("example-server", hidden=True,
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def example_server(
        ctx: typer.Context,
        name: Annotated[str, typer.Argument(help="notes | calc | textkit")],
    ) -> None:
        """Run one of the bundled example MCP servers over stdio (what examples/servers.yaml registers).

        Same as `python -m mcpctl.examples.NAME`, but found wherever `mcpctl` is: the gateway looks
        commands up on PATH and next to the Python running it, so this works from an unactivated venv.
        """
        import importlib

        from mcpctl import heap

        if name not in EXAMPLE_SERVERS:
            raise typer.BadParameter(f"{name!r} is not one of: {', '.join(EXAMPLE_SERVERS)}", param_hint="NAME")
        heap.start()                # the SDK's import without collections; the server settles (heap.py)
        importlib.import_module(f"mcpctl.examples.{name}").main(list(ctx.args))

    @app.command("demo", rich_help_panel="Getting started")
    @cli_errors
    def demo(
        home: Annotated[Path | None, typer.Option(
            "--home", help="Use this directory as MCPCTL_HOME (a separate store) instead of your own.")] = None,
        keep: Annotated[bool, typer.Option(
            "--keep/--cleanup", help="Keep the demo servers and project registered afterwards (default), "
            "or delete them at the end.")] = True,
        timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds to allow the whole run.")] = 90.0,
        protocol: Annotated[str, typer.Option(
            "--protocol", help="How the demo client connects: auto (2026-07-28 server/discover, as Claude Code "
            "does, falling back to the handshake) or legacy (the initialize handshake).")] = "auto",
    ) -> None:
        """See mcpctl work end to end on its bundled example servers.

        Registers the example servers and a 'demo' project, starts the real gateway, calls tools through it with the official MCP client, and shows the resulting invocation log.
        """
        import importlib.util

        import anyio

        from mcpctl import paths
        from mcpctl.errors import MCPCtlError
        from mcpctl.storage import Storage

        if protocol not in ("auto", "legacy"):
            raise typer.BadParameter(f"{protocol!r} is not one of: auto, legacy", param_hint="'--protocol'")
        if importlib.util.find_spec("mcpctl.cli.serve") is None:
            raise MCPCtlError("the gateway (mcpctl serve) is not part of this build yet",
                              hint="update mcpctl; the demo starts `mcpctl serve --project demo`")
        with demo_run.at_home(home.expanduser().resolve() if home else None):
            store = Storage.files().store             # the demo's own files, whatever the database
            registered = register_demo(store)
            started = time.time()
            errlog = paths.log_dir() / "demo-gateway.stderr"
            try:
                session = anyio.run(run_session, timeout, errlog, protocol)
            except Exception as e:   # the SDK raises (nested) exception groups
                raise demo_run.gateway_failed(e, errlog) from None
            from ._common import invocation_log, the_cache, the_store

            with invocation_log() as log:
                found = demo_run.evidence(started, the_store(), the_cache(), log)
            note = f"(MCPCTL_HOME={os.environ['MCPCTL_HOME']})" if os.environ.get("MCPCTL_HOME") \
                else f"(store: {paths.resources_dir()})"
            print_report(note, registered, session, found.rows, found.pairs, found.log_path,
                         (found.suggested, found.line), kept=keep)
            if not keep:
                demo_run.unregister_demo(store)
                err.print("Removed the demo servers and project (--cleanup).")
