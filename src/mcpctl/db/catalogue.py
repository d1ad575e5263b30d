"""The catalogue cache in the database (component `catalogue`): each server's last listing,
shared so that a new gateway instance starts warm.

The files under `catalogue_cache_dir()` stay each host's working copy (`mcpctl.catalogue.cache`
reads them first). With a database URL in effect, every listing a host writes is also upserted
here, and a host that has no file for a server takes the database's entry (and keeps it as its
file). The cache is best effort: a database error is logged once and the host goes on from its
files. Pins (`catalogue.pins`) and sentence vectors stay local.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from mcpctl.db.migrations import Migration, register

log = logging.getLogger("mcpctl.db")

MIGRATIONS: Final = [Migration(1, "catalogue cache entries", """
CREATE TABLE catalogue_entries (
    server     text        PRIMARY KEY,
    entry      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
)""")]
register("catalogue", MIGRATIONS)

_warned: set[str] = set()


def _url() -> str | None:
    from mcpctl.db.config import database_url

    return database_url()


def _usable(url: str) -> bool:
    from mcpctl.db import migrations

    try:
        migrations.require("catalogue", url)
        return True
    except Exception as e:
        if url not in _warned:
            _warned.add(url)
            log.warning("the shared catalogue cache is not used: %s", e)
        return False


def read(server: str) -> dict[str, Any] | None:
    """The database's entry for `server`, or None (no database, none stored, or an error)."""
    url = _url()
    if url is None or not _usable(url):
        return None
    from mcpctl.db import pool

    try:
        with pool.connection(url) as conn:
            row = conn.execute("SELECT entry FROM catalogue_entries WHERE server = %s", (server,)).fetchone()
    except Exception as e:
        log.warning("reading the shared catalogue cache of %s failed: %s", server, e)
        return None
    return dict(row[0]) if row is not None and isinstance(row[0], dict) else None


def write(server: str, entry: dict[str, Any]) -> None:
    """Upsert `server`'s entry (no-op without a database; errors are logged)."""
    url = _url()
    if url is None or not _usable(url):
        return
    from psycopg.types.json import Jsonb

    from mcpctl.db import pool

    try:
        with pool.connection(url) as conn:
            conn.execute("INSERT INTO catalogue_entries (server, entry) VALUES (%s, %s) ON CONFLICT (server) "
                         "DO UPDATE SET entry = EXCLUDED.entry, updated_at = now()",
                         (server, Jsonb(json.loads(json.dumps(entry)))))
    except Exception as e:
        log.warning("writing the shared catalogue cache of %s failed: %s", server, e)


def delete(server: str) -> None:
    url = _url()
    if url is None or not _usable(url):
        return
    from mcpctl.db import pool

    try:
        with pool.connection(url) as conn:
            conn.execute("DELETE FROM catalogue_entries WHERE server = %s", (server,))
    except Exception as e:
        log.warning("deleting the shared catalogue cache of %s failed: %s", server, e)
