"""`mcpctl connect CLIENT --project P` / `mcpctl disconnect CLIENT`: the gateway entry in a
client's configuration. Core: `mcpctl.clients.connect`; what they say: `mcpctl.clients.connect_report`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._common import check_format, cli_errors, complete_projects, err, the_store, write_stdout
from .import_cmd import complete_clients

if TYPE_CHECKING:
    from mcpctl.clients.connect import ConnectReport

_Client = Annotated[str, typer.Argument(metavar="CLIENT", autocompletion=complete_clients,
                                        help="claude-desktop | claude-code | cursor | vscode | codex | mcp-json")]
_File = Annotated[str | None, typer.Option("--file", "-f", help="The client's configuration file (default: its "
                                           "standard location; for Claude Code, its `claude mcp` command when "
                                           "installed).")]
_Name = Annotated[str, typer.Option("--name", help="The entry's name in the client.")]
_Output = Annotated[str, typer.Option("-o", "--output", help="text|json")]


def _emit(r: ConnectReport, output: str, text: str) -> None:
    import json

    from mcpctl.clients.connect_report import report_json

    for w in r.warnings:
        err.print(f"warning: {w}", markup=False)
    if output == "json":
        write_stdout(json.dumps(report_json(r), indent=2, ensure_ascii=False) + "\n")
    else:
        write_stdout(text)
    for h in r.hints:
        err.print(f"note: {h}", markup=False)


def register(app: typer.Typer) -> None:
    @app.command("connect", rich_help_panel="Getting started")
    @cli_errors
    def connect_cmd(
        client: _Client,
        project: Annotated[str, typer.Option("--project", "-p", autocompletion=complete_projects,
                                             help="The project the client gets.")],
        file: _File = None,
        transport: Annotated[str, typer.Option("--transport", help="stdio (the client starts the gateway) or "
                                               "http (a running mcpctl serve --transport http).")] = "stdio",
        port: Annotated[int, typer.Option("--port", help="http: the gateway's port.")] = 8765,
        host: Annotated[str, typer.Option("--host", help="http: the gateway's host.")] = "127.0.0.1",
        name: _Name = "mcpctl",
        replace_imported: Annotated[bool, typer.Option("--replace-imported", help="Remove the entries mcpctl "
                                                       "imported, so the client sees only the gateway "
                                                       "(disconnect puts them back).")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
        output: _Output = "text",
    ) -> None:
        """Point a client at the gateway: write its mcpctl entry.

        The file is backed up first and edited in place: every other key, comment and byte is kept.
        """
        check_format(output, ("text", "json"))
        if transport not in ("stdio", "http"):
            raise typer.BadParameter("must be stdio or http", param_hint="'--transport'")
        from mcpctl.clients.connect import connect
        from mcpctl.clients.connect_report import connect_text

        r = connect(client, project, file=file, transport=transport, host=host, port=port, name=name,
                    replace_imported=replace_imported, dry_run=dry_run, store=the_store())
        _emit(r, output, connect_text(r))

    @app.command("disconnect", rich_help_panel="Getting started")
    @cli_errors
    def disconnect_cmd(
        client: _Client,
        file: _File = None,
        name: _Name = "mcpctl",
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
        output: _Output = "text",
    ) -> None:
        """Undo mcpctl connect: remove the gateway entry, put back the entries it replaced.

        When nothing else changed the file since, the original comes back byte for byte.
        """
        check_format(output, ("text", "json"))
        from mcpctl.clients.connect import disconnect
        from mcpctl.clients.connect_report import disconnect_text

        r = disconnect(client, file=file, name=name, dry_run=dry_run, store=the_store())
        _emit(r, output, disconnect_text(r))
