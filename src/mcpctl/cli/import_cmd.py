"""`mcpctl import FROM [--file PATH] [--project P] [--dry-run]`: a client's servers into the store.

The module is not called `import` (a keyword). Core: `mcpctl.clients.importer`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import check_format, cli_errors, complete_projects, err, the_store, write_stdout

if TYPE_CHECKING:
    from mcpctl.clients.importer import ImportReport


def complete_clients(incomplete: str) -> list[tuple[str, str]]:
    from mcpctl.clients.registry import complete_clients as complete

    return complete(incomplete)


def _secret_line(server: str, note: Any, dry_run: bool) -> str:
    if note.kind == "env":
        return f"  server/{server} {note.field}: stays {note.reference} (the client's variable; set it where the gateway starts)"
    verb = ("would move to" if dry_run else "moved to") if note.changed else "kept in"
    return f"  server/{server} {note.field}: literal secret {verb} {note.reference} (0600)"


def render_text(r: ImportReport) -> str:
    suffix = " (dry run)" if r.dry_run else ""
    lines: list[str] = []
    for s in r.servers:
        origin = f" (from {s.entry!r}{', ' + s.scope if s.scope else ''})" if s.renamed or s.scope else ""
        lines.append(f"server/{s.server} {s.action}{suffix}{origin}")
    if r.project is not None:
        lines.append(f"{r.project.ref} {r.project.action}{suffix}")
    secrets = [_secret_line(s.server, n, r.dry_run) for s in r.servers for n in s.secrets]
    if secrets:
        lines += ["secrets:", *secrets]
    notes = [f"  server/{s.server}: {n}" for s in r.servers for n in s.notes]
    if notes:
        lines += ["notes:", *notes]
    if r.skipped:
        lines.append("not imported:")
        for k in r.skipped:
            what = ", ".join(x for x in (k.transport if k.transport not in ("", "?") else "", k.scope) if x)
            lines.append(f"  {k.name!r}{f' ({what})' if what else ''}: {k.reason}")
    return "".join(line + "\n" for line in lines)


def to_json(r: ImportReport) -> dict[str, Any]:
    return {
        "client": r.client, "file": str(r.file), "dryRun": r.dry_run,
        "servers": [{"entry": s.entry, "scope": s.scope, "server": s.server, "transport": s.transport,
                     "action": s.action, "inProject": s.in_project, "notes": s.notes,
                     "secrets": [{"field": n.field, "kind": n.kind, "reference": n.reference} for n in s.secrets]}
                    for s in r.servers],
        "skipped": [{"entry": k.name, "scope": k.scope, "transport": k.transport, "reason": k.reason} for k in r.skipped],
        "project": None if r.project is None else {"name": r.project.name, "action": r.project.action},
        "warnings": r.warnings,
    }


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
        from mcpctl.clients.importer import import_client

        report = import_client(client, file=file, project=project, dry_run=dry_run, store=the_store())
        for w in report.warnings:
            err.print(f"warning: {w}", markup=False)
        if output == "json":
            write_stdout(json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n")
            return
        write_stdout(render_text(report))
        if not report.servers and not report.skipped:
            err.print(f"{report.file}: no MCP server entries", markup=False)
        elif report.servers and not dry_run:
            if project:
                err.print(f"next: mcpctl connect {report.client} --project {project} --replace-imported",
                          markup=False)
            else:
                err.print(f"next: group them in a project (mcpctl import {report.client} --project P), "
                          f"then mcpctl connect {report.client} --project P", markup=False)
