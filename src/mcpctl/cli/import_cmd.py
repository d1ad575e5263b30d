"""`mcpctl import FROM [--file PATH] [--project P] [--dry-run]`: a client's servers into the store.

The module is not called `import` (a keyword). Core: `mcpctl.clients.importer`; what it says:
`mcpctl.clients.import_report`.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ._common import check_format, cli_errors, complete_projects, err, the_store, write_stdout


def complete_clients(incomplete: str) -> list[tuple[str, str]]:
    from mcpctl.clients.registry import complete_clients as complete

    return complete(incomplete)


def register(app: typer.Typer) -> None:
    @app.command("import", rich_help_panel="Getting started")
    @cli_errors
    def import_(
        client: Annotated[str, typer.Argument(
            metavar="FROM", autocompletion=complete_clients,
            help="claude-desktop | claude-code | cursor | vscode | codex | mcp-json")],
        file: Annotated[str | None, typer.Option("--file", "-f", help="The client's configuration file "
                                                 "(default: its standard location on this OS).")] = None,
        project: Annotated[str | None, typer.Option("--project", "-p", autocompletion=complete_projects,
                                                    help="Also add the imported servers to this project "
                                                    "(created if missing).")] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
        output: Annotated[str, typer.Option("-o", "--output", help="text|json")] = "text",
    ) -> None:
        """Import the MCP servers a client already has (each entry becomes a server).

        Literal secrets (secret-named env and headers, --password/--token values, URL passwords, secret
        query parameters, webhook paths, tokens) move to 0600 files referenced as ${file:…}; the client's
        own variables become ${env:…}. Entries mcpctl cannot represent are listed with the reason. Importing
        twice changes nothing.
        """
        check_format(output, ("text", "json"))
        from mcpctl.clients.import_report import import_json, import_text
        from mcpctl.clients.importer import import_client

        report = import_client(client, file=file, project=project, dry_run=dry_run, store=the_store())
        for w in report.warnings:
            err.print(f"warning: {w}", markup=False)
        if output == "json":
            write_stdout(json.dumps(import_json(report), indent=2, ensure_ascii=False) + "\n")
            return
        write_stdout(import_text(report))
        if not report.servers and not report.skipped:
            err.print(f"{report.file}: no MCP server entries", markup=False)
        elif report.servers and not dry_run:
            if project:
                err.print(f"next: mcpctl connect {report.client} --project {project} --replace-imported",
                          markup=False)
            else:
                err.print(f"next: group them in a project (mcpctl import {report.client} --project P), "
                          f"then mcpctl connect {report.client} --project P", markup=False)
