"""`mcpctl db migrate|status|copy`: the team database (PostgreSQL, chosen by `MCPCTL_DATABASE_URL`,
`--database-url` or the `database.url` setting). Nothing here imports psycopg until it runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import cli_errors, err, out, safe


def register(app: typer.Typer) -> None:
    db_app = typer.Typer(help="The team database (PostgreSQL): migrate its schema, show its status, copy a store "
                              "into or out of it.", no_args_is_help=True)
    app.add_typer(db_app, name="db")
    _register_copy(db_app)

    @db_app.command("migrate")
    @cli_errors
    def migrate() -> None:
        """Apply the pending schema migrations of every component (safe to run concurrently)."""
        from mcpctl.db import migrations
        from mcpctl.db.config import redacted
        from mcpctl.db.pool import require_url

        from ._common import storage

        url = require_url(storage().url)
        done = migrations.migrate(url)
        for name, m in done:
            err.print(f"applied {name} {m.version}: {m.description}", markup=False)
        current = ", ".join(f"{s.component} {s.applied}" for s in migrations.status(url))
        err.print(f"{redacted(url)}: {'up to date' if not done else 'migrated'} ({current})", markup=False)

    @db_app.command("status")
    @cli_errors
    def status(
        output: Annotated[str, typer.Option("--output", "-o", help="table or json.")] = "table",
    ) -> None:
        """Each component's schema version in the database and the one this mcpctl expects.

        Exit code 1 when any component is behind (run `mcpctl db migrate`) or ahead (upgrade mcpctl)."""
        import json

        from mcpctl.db import migrations
        from mcpctl.db.config import redacted
        from mcpctl.db.pool import require_url

        from ._common import storage

        url = require_url(storage().url)
        rows = migrations.status(url)
        if output == "json":
            out.print(json.dumps({"database": redacted(url), "components": [
                {"component": r.component, "applied": r.applied, "latest": r.latest, "state": r.state}
                for r in rows]}, indent=2), markup=False)
        else:
            from rich.table import Table

            table = Table(box=None, pad_edge=False, title=None)
            for col in ("COMPONENT", "APPLIED", "LATEST", "STATE"):
                table.add_column(col)
            for r in rows:
                table.add_row(safe(r.component), str(r.applied), str(r.latest), r.state)
            err.print(f"database {safe(redacted(url))}", markup=False)
            out.print(table)
        if any(r.state != "current" for r in rows):
            behind = any(r.state == "behind" for r in rows)
            err.print("run: mcpctl db migrate" if behind else "the database is newer than this mcpctl: upgrade it",
                      markup=False)
            raise typer.Exit(1)


def _register_copy(db_app: typer.Typer) -> None:
    @db_app.command("copy")
    @cli_errors
    def copy(
        source: Annotated[str, typer.Option("--from", help="The store: 'files' or a postgresql:// URL; the "
                                                           "invocation log: 'sqlite', a SQLite file, or a URL.")],
        target: Annotated[str, typer.Option("--to", help="The same choices: where it goes.")],
        overwrite: Annotated[bool, typer.Option("--overwrite", help="Store: replace objects the target has that differ.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Store: count what would be copied; write nothing.")] = False,
    ) -> None:
        """Copy the store (--from/--to files) or the invocation log (--from/--to sqlite or a .db file) between
        this machine and a database, either way.

        The store goes all or nothing into a database (one transaction); an object the target already has is
        left alone when identical and is a conflict when different (unless --overwrite). Log rows are appended."""
        from mcpctl.db.config import redacted
        from mcpctl.errors import MCPCtlError

        if source == target:
            raise MCPCtlError("--from and --to are the same store")
        if "files" in (source, target):
            from mcpctl.resources.copy import copy_store
            from mcpctl.storage import Storage

            report = copy_store(Storage.at(source).store, Storage.at(target).store, overwrite=overwrite, dry_run=dry_run)
            where = f"{redacted(source)} -> {redacted(target)}"
            line = report.line()
            out.print(f"{where}: {'would copy ' + line.removeprefix('copied ') if dry_run else line}", markup=False)
            return
        from mcpctl.audit.copy import copy_between

        copied, total = copy_between(source, target)
        err.print(f"log: {copied} call(s) copied from {redacted(source)} to {redacted(target)} "
                  f"({total} there now)", markup=False)

