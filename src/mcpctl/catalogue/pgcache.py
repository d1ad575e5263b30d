"""The catalogue cache in the team's database (component `catalogue`): each server's last listing,
shared so that a new gateway instance starts warm.

`PgCache` keeps this host's files as its working copy (a `FilesCache` it owns, not a base class):
a host reads its own file first and, when it has none for a server, takes the database's entry
and keeps it as its file; every entry it writes or deletes goes to both. The database is best
effort: an error is logged (a schema not current, once) and the host goes on from its files.
Pins (`catalogue.pins`) and sentence vectors stay on each host. The schema is below, registered
with the migration runner (`mcpctl.db.migrations`).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from mcpctl.catalogue.cache import CatalogueCache, FilesCache, valid_entry
from mcpctl.db.migrations import Migration, register

log = logging.getLogger("mcpctl.db")

MIGRATIONS: Final = [Migration(1, "catalogue cache entries", """
CREATE TABLE catalogue_entries (
    server     text        PRIMARY KEY,
    entry      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
)""")]
register("catalogue", MIGRATIONS)


class PgCache(CatalogueCache):
    """The PostgreSQL backend of `CatalogueCache` at `url`, with `local` as this host's working copy."""

    def __init__(self, url: str, local: FilesCache) -> None:
        self.url = url
        self.local = local
        self._usable: bool | None = None     # the schema checked on first use

    def _ready(self) -> bool:
        if self._usable is None:
            from mcpctl.db import migrations

            try:
                migrations.require("catalogue", self.url)
                self._usable = True
            except Exception as e:
                log.warning("the shared catalogue cache is not used: %s", e)
                self._usable = False
        return self._usable

    def _execute(self, what: str, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]] | None:
        """Rows of `sql` (None if the database is not usable or failed, which is logged)."""
        if not self._ready():
            return None
        from mcpctl.db import pool

        try:
            with pool.connection(self.url) as conn:
                cur = conn.execute(sql, args)
                return list(cur.fetchall()) if cur.description is not None else []
        except Exception as e:
            log.warning("%s the shared catalogue cache failed: %s", what, e)
            return None

    def read_server_entry(self, server: str) -> dict[str, Any] | None:
        entry = self.local.read_server_entry(server)
        if entry is not None:
            return entry
        rows = self._execute(f"reading {server} from", "SELECT entry FROM catalogue_entries WHERE server = %s",
                             (server,))
        entry = valid_entry(dict(rows[0][0])) if rows and isinstance(rows[0][0], dict) else None
        if entry is not None:
            self.local.put_entry(server, entry)
        return entry

    def put_entry(self, server: str, entry: dict[str, Any]) -> None:
        self.local.put_entry(server, entry)
        if not self._ready():
            return
        from psycopg.types.json import Jsonb

        self._execute(f"writing {server} to", "INSERT INTO catalogue_entries (server, entry) VALUES (%s, %s) "
                      "ON CONFLICT (server) DO UPDATE SET entry = EXCLUDED.entry, updated_at = now()",
                      (server, Jsonb(json.loads(json.dumps(entry)))))

    def delete_server(self, server: str) -> None:
        self.local.delete_server(server)
        self._execute(f"deleting {server} from", "DELETE FROM catalogue_entries WHERE server = %s", (server,))

    def servers(self) -> list[str]:
        rows = self._execute("listing", "SELECT server FROM catalogue_entries", ()) or []
        return sorted({str(r[0]) for r in rows} | set(self.local.servers()))


__all__ = ["MIGRATIONS", "PgCache"]
