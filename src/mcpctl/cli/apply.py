"""`mcpctl apply -f FILE|DIR|- [--dry-run]`: create or update from manifests."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mcpctl.resources.apply import apply_documents
from mcpctl.resources.yamlio import load_sources, skipped_message

from ._common import cli_errors, err, the_store, warn, write_stdout


def register(app: typer.Typer) -> None:
    @app.command("apply", rich_help_panel="Resources")
    @cli_errors
    def apply(
        filename: Annotated[list[str], typer.Option("-f", "--filename", help="File, directory or - for stdin (repeatable).")],
        recursive: Annotated[bool, typer.Option("-R", "--recursive", help="Read directories recursively.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and show what would change; write nothing.")] = False,
        allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Accept projects naming servers not registered yet.")] = False,
    ) -> None:
        """Create or update resources from YAML/JSON manifests. All documents are validated first: one bad document changes nothing."""
        docs = load_sources(filename, stdin=sys.stdin, recursive=recursive,
                            on_skip=lambda paths: err.print(skipped_message(paths), markup=False, highlight=False))
        from ._common import the_cache

        changes, warnings = apply_documents(docs, the_store(), dry_run=dry_run, allow_missing=allow_missing,
                                            known_tools=the_cache().read_server_tools)
        for w in warnings:
            warn(w)
        suffix = " (dry run)" if dry_run else ""
        write_stdout("".join(f"{c.ref} {c.action}{suffix}\n" for c in changes))
