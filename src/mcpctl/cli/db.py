"""`mcpctl db migrate|status|copy`: the team database (PostgreSQL, chosen by `MCPCTL_DATABASE_URL`,
`--database-url` or the `database.url` setting). Nothing here imports psycopg until it runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import cli_errors, err, out, safe

db_app = typer.Typer(help="The team database (PostgreSQL): migrate its schema, show its status, copy a store "
                          "into or out of it.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")

    @db_app.command("migrate")
    @cli_errors
    def migrate() -> None:
        """Apply the pending schema migrations of every component (safe to run concurrently)."""
        from mcpctl.db import migrations
        from mcpctl.db.config import redacted
        from mcpctl.db.pool import require_url

        url = require_url()
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

        url = require_url()
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

    @db_app.command("copy")
    @cli_errors
    def copy(
        source: Annotated[str, typer.Option("--from", help="sqlite (this machine's log), a SQLite file, "
                                                           "or a postgresql:// URL.")],
        target: Annotated[str, typer.Option("--to", help="The same choices: where the rows go (appended).")],
    ) -> None:
        """Copy the invocation log between SQLite and the team database (either way); reports counts."""
        from mcpctl.audit.copy import copy_between
        from mcpctl.db.config import redacted

        copied, total = copy_between(source, target)
        err.print(f"log: {copied} call(s) copied from {redacted(source)} to {redacted(target)} "
                  f"({total} there now)", markup=False)
