"""Named schema migrations for the invocation log (SQLite), recorded in `_mcpctl_migrations`.

Each migration is a function registered in order with `@migration`; its function name is its
permanent identity. A migration that has run is never edited: add a new one instead. All of
them run inside one `BEGIN IMMEDIATE` transaction, so two gateways opening a fresh database at
the same moment cannot both apply the same migration.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Final

MIGRATIONS_TABLE: Final = "_mcpctl_migrations"

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    """Register `fn` as the next migration."""
    MIGRATIONS.append(fn)
    return fn


def applied(db: sqlite3.Connection) -> list[str]:
    """Names of the migrations already applied to `db`, in the order they ran."""
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (MIGRATIONS_TABLE,)
    ).fetchone()
    if not exists:
        return []
    return [row[0] for row in db.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY applied_at, rowid")]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every pending migration in one write transaction; return the names applied.

    `db` must be in autocommit mode (`isolation_level=None`); the caller retries on SQLITE_BUSY.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} ("
            " name TEXT PRIMARY KEY,"
            " applied_at REAL NOT NULL)"
        )
        done = set(applied(db))
        ran: list[str] = []
        for fn in MIGRATIONS:
            if fn.__name__ in done:
                continue
            fn(db)
            db.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
                (fn.__name__, time.time()),
            )
            ran.append(fn.__name__)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return ran


# -- the migrations, in order -----------------------------------------------------------------


@migration
def m001_invocations(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE invocations (
            id             INTEGER PRIMARY KEY,
            ts             REAL    NOT NULL,
            duration_ms    REAL    NOT NULL,
            project        TEXT    NOT NULL,
            presented_name TEXT    NOT NULL,
            canonical_id   TEXT,
            outcome        TEXT    NOT NULL,
            error_class    TEXT,
            client_name    TEXT,
            client_version TEXT,
            session_id     TEXT,
            profile        TEXT,
            query          TEXT
        )
        """
    )


@migration
def m002_indexes(db: sqlite3.Connection) -> None:
    db.execute("CREATE INDEX idx_invocations_ts ON invocations (ts)")
    db.execute("CREATE INDEX idx_invocations_project_ts ON invocations (project, ts)")
    db.execute("CREATE INDEX idx_invocations_canonical_ts ON invocations (canonical_id, ts)")
    # search_pairs walks one session forward from each search.
    db.execute("CREATE INDEX idx_invocations_session_ts ON invocations (session_id, ts)")


@migration
def m003_search_index(db: sqlite3.Connection) -> None:
    # search_pairs starts from the (rare) rows that carry a query.
    db.execute("CREATE INDEX idx_invocations_searches ON invocations (project, ts) WHERE query IS NOT NULL")


@migration
def m004_result_size(db: sqlite3.Connection) -> None:
    # results in sections: the result's size and how many sections it was cut into; rows written
    # before this migration keep NULL in both (size unknown, not cut)
    db.execute("ALTER TABLE invocations ADD COLUMN result_chars INTEGER")
    db.execute("ALTER TABLE invocations ADD COLUMN result_sections INTEGER")


@migration
def m005_credential_host(db: sqlite3.Connection) -> None:
    # a team's gateways: which credential (token name) called, and which gateway host answered;
    # rows written before this migration keep NULL in both
    db.execute("ALTER TABLE invocations ADD COLUMN credential TEXT")
    db.execute("ALTER TABLE invocations ADD COLUMN host TEXT")
