"""Versioned schema migrations, per component, in one `schema_migrations` table.

A component (the store, the catalogue cache, the invocation log) owns a list of `Migration`s
numbered 1, 2, 3...; `migrate()` applies the pending ones in order, each in its own transaction
with its row in `schema_migrations`, under an advisory lock so two `mcpctl db migrate` runs at
once apply each migration once. Nothing migrates implicitly: a gateway or command calls
`require(component)` first, which says to run `mcpctl db migrate` when the database is behind
and refuses when it is ahead (a newer mcpctl migrated it; this one would misread its tables).

A component registers its migrations with `register(name, migrations)`, usually at import of a
module named in `COMPONENTS` (imported lazily, in order, by `registered()`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Final

from mcpctl.db import pool
from mcpctl.errors import MCPCtlError

# Components whose module registers their migrations when imported; another component adds its
# module here (or calls `register` before `migrate`).
COMPONENTS: Final[dict[str, str]] = {
    "store": "mcpctl.resources.pg_schema",
    "catalogue": "mcpctl.catalogue.pgcache",
    "log": "mcpctl.audit.pg_migrations",
    "cluster": "mcpctl.cluster.schema",
}
_LOCK_KEY: Final = 0x6D63_7063  # "mcpc": the advisory lock `migrate` holds
_TABLE: Final = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    component   text        NOT NULL,
    version     integer     NOT NULL,
    description text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (component, version)
)"""


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    sql: str


class SchemaBehind(MCPCtlError):
    """The database lacks migrations this mcpctl needs."""


class SchemaAhead(MCPCtlError):
    """The database was migrated by a newer mcpctl."""


_registry: dict[str, list[Migration]] = {}


def register(component: str, migrations: list[Migration]) -> None:
    """Register `component`'s migrations (versions 1..n, contiguous)."""
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(migrations) + 1)):
        raise ValueError(f"{component}: migration versions must be 1..{len(migrations)}, got {versions}")
    _registry[component] = list(migrations)


def registered() -> dict[str, list[Migration]]:
    for name, module in COMPONENTS.items():
        if name not in _registry:
            importlib.import_module(module)
    return dict(_registry)


def _applied(conn: Any) -> dict[str, int]:
    """Each component's highest applied version (empty before the first migrate)."""
    row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return {}
    rows = conn.execute("SELECT component, max(version) FROM schema_migrations GROUP BY component").fetchall()
    return {str(c): int(v) for c, v in rows}


@dataclass(frozen=True)
class ComponentStatus:
    component: str
    applied: int           # 0: none yet
    latest: int            # what this mcpctl knows

    @property
    def state(self) -> str:
        if self.applied == self.latest:
            return "current"
        return "behind" if self.applied < self.latest else "ahead"


def status(url: str) -> list[ComponentStatus]:
    """Every component this mcpctl knows, and any the database has that it does not."""
    known = registered()
    with pool.connection(url) as conn:
        applied = _applied(conn)
    names = list(known) + sorted(set(applied) - set(known))
    return [ComponentStatus(n, applied.get(n, 0), len(known.get(n, []))) for n in names]


def migrate(url: str) -> list[tuple[str, Migration]]:
    """Apply every pending migration; returns what was applied. Refuses a database that is ahead."""
    known = registered()
    done: list[tuple[str, Migration]] = []
    with pool.connection(url) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            conn.execute(_TABLE)
            conn.commit()
            applied = _applied(conn)
            conn.commit()
            for name, migrations in known.items():
                have = applied.get(name, 0)
                if have > len(migrations):
                    raise _ahead(name, have, len(migrations))
                for m in migrations[have:]:          # each in its own transaction, with its row
                    conn.execute(m.sql)
                    conn.execute("INSERT INTO schema_migrations (component, version, description) "
                                 "VALUES (%s, %s, %s)", (name, m.version, m.description))
                    conn.commit()
                    done.append((name, m))
        finally:
            conn.rollback()
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
            conn.commit()
    return done


def _ahead(component: str, have: int, latest: int) -> SchemaAhead:
    return SchemaAhead(f"the database's {component} schema is at version {have}, newer than this mcpctl "
                       f"knows ({latest}): it was migrated by a newer mcpctl",
                       hint="upgrade mcpctl on this machine; it will not write to a schema it does not know")


_checked: set[tuple[str, str]] = set()


def require(component: str, url: str) -> None:
    """Raise unless `component`'s schema is exactly what this mcpctl expects (checked once per process)."""
    if (url, component) in _checked:
        return
    latest = len(registered().get(component, []))
    with pool.connection(url) as conn:
        have = _applied(conn).get(component, 0)
    if have < latest:
        what = "not created yet" if have == 0 else f"at version {have}, this mcpctl needs {latest}"
        raise SchemaBehind(f"the database's {component} schema is {what}", hint="run: mcpctl db migrate")
    if have > latest:
        raise _ahead(component, have, latest)
    _checked.add((url, component))
