"""`mcpctl connect CLIENT --project P` / `mcpctl disconnect CLIENT`: the gateway entry in a
client's configuration. Core: `mcpctl.clients.connect`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

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


def _target(r: ConnectReport) -> str:
    e = r.entry if isinstance(r.entry, dict) else {}
    if e.get("url"):
        return f"http: {e['url']}"
    return "stdio: " + " ".join([str(e.get("command", "")), *[str(a) for a in e.get("args") or []]])


def render_connect(r: ConnectReport) -> str:
    suffix = " (dry run)" if r.dry_run else ""
    where = "Claude Code's user scope (claude mcp)" if r.method == "claude" else str(r.file)
    lines = [f"{r.client}: entry {r.name!r} {r.action}{suffix} in {where} ({_target(r)})"]
    if r.dry_run and r.action != "unchanged":
        lines.append("entry: " + json.dumps(r.entry, ensure_ascii=False))
    lines += [f"{'would run' if r.dry_run else 'ran'}: {c}" for c in r.commands]
    if r.backup:
        lines.append(f"backup: {r.backup}")
    if r.removed:
        lines.append(f"{'would remove' if r.dry_run else 'removed'} (imported; the gateway serves them): "
                     + ", ".join(r.removed))
    lines += [f"kept {k}" for k in r.kept]
    if (not r.dry_run and r.action != "unchanged") or r.removed:
        lines.append(f"undo: mcpctl disconnect {r.client}" + (f" --file {r.file}" if r.method == "file" and
                                                               r.file != _default(r.client) else "")
                     + (f" --name {r.name}" if r.name != "mcpctl" else ""))
    return "".join(line + "\n" for line in lines)


def render_disconnect(r: ConnectReport) -> str:
    suffix = " (dry run)" if r.dry_run else ""
    where = "Claude Code's user scope (claude mcp)" if r.method == "claude" else str(r.file)
    what = {"restored": "removed; original entries restored", "removed": "removed",
            "unchanged": "not found: nothing to do",
            "kept": "left in place: it is not the entry mcpctl connect wrote"}[r.action]
    lines = [f"{r.client}: entry {r.name!r} {what}{suffix} ({where})"]
    lines += [f"{'would run' if r.dry_run else 'ran'}: {c}" for c in r.commands]
    if r.removed:
        lines.append("put back: " + ", ".join(r.removed))
    lines += [f"kept {k}" for k in r.kept]
    if r.backup:
        lines.append(f"backup: {r.backup}")
    return "".join(line + "\n" for line in lines)


def _default(client: str) -> Any:
    from mcpctl.clients.registry import get_client

    path = get_client(client).default_path()
    return path.absolute() if path else None


def _json(r: ConnectReport) -> dict[str, Any]:
    return {"client": r.client, "file": str(r.file), "name": r.name, "action": r.action, "method": r.method,
            "project": r.project, "transport": r.transport, "entry": r.entry, "dryRun": r.dry_run,
            "backup": str(r.backup) if r.backup else None, "removed": r.removed, "kept": r.kept,
            "commands": r.commands, "warnings": r.warnings}


def _emit(r: ConnectReport, output: str, text: str) -> None:
    for w in r.warnings:
        err.print(f"warning: {w}", markup=False)
    if output == "json":
        write_stdout(json.dumps(_json(r), indent=2, ensure_ascii=False) + "\n")
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

        r = connect(client, project, file=file, transport=transport, host=host, port=port, name=name,
                    replace_imported=replace_imported, dry_run=dry_run, store=the_store())
        _emit(r, output, render_connect(r))

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

        r = disconnect(client, file=file, name=name, dry_run=dry_run, store=the_store())
        _emit(r, output, render_disconnect(r))
