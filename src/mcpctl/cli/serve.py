"""`mcpctl serve --project P [--transport stdio|http] [--host H] [--port N] [--token-file F]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import cli_errors, complete_projects, err


def register(app: typer.Typer) -> None:
    @app.command("serve", rich_help_panel="Gateway")
    @cli_errors
    def serve(
        project: Annotated[str, typer.Option("--project", "-p", help="The project to serve.",
                                             autocompletion=complete_projects)],
        transport: Annotated[str, typer.Option(help="stdio (one local client) or http (streamable HTTP).")
                             ] = "stdio",
        host: Annotated[str, typer.Option(help="HTTP: interface to bind (loopback by default).")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="HTTP: port to listen on.")] = 8765,
        token_file: Annotated[Path | None, typer.Option(
            "--token-file", help="HTTP: file holding the bearer token (created with a fresh token, "
            "mode 0600, if missing). Default: <state dir>/tokens/<project>.token.")] = None,
        verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress to stderr too.")] = False,
    ) -> None:
        """Serve a project's curated catalogue as one MCP server.

        stdio is for one local client (Claude Code, Codex, ...): stdout carries only the protocol.
        http serves several clients at http://HOST:PORT/mcp with a required bearer token.
        """
        if transport not in ("stdio", "http"):
            raise typer.BadParameter("must be stdio or http", param_hint="'--transport'")
        from mcpctl.gateway import run

        log_path = run.setup_logging(project, verbose=verbose)

        def ready(where: str) -> None:
            if where != "stdio":
                tpath = token_file or run.token_path(project)
                err.print(f"mcpctl: serving project {project!r} at {where}", markup=False)
                err.print(f"  header: Authorization: Bearer $(cat {tpath})", markup=False)
                err.print(f"  log: {log_path}", markup=False)

        run.run(project, transport=transport, host=host, port=port, token_file=token_file, on_ready=ready)
