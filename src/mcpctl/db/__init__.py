"""PostgreSQL for a team's gateways: one URL, one pool, versioned migrations per component.

Without a database URL nothing here is imported and nothing changes: the store stays in files and
the log in SQLite. With one (`MCPCTL_DATABASE_URL`, the `--database-url` global option, or the
`database.url` setting in `config_dir()/settings.yaml`), the components that support it keep their
state in PostgreSQL through psycopg 3 (the `postgres` extra).

The API, small on purpose:

- `mcpctl.db.config.database_url()`: the URL in effect, or None (no psycopg import); called only
  where `mcpctl.storage.Storage` is opened, which decides the backend once per process.
- `mcpctl.db.pool.connection()`: a context manager lending a connection from the process's pool,
  created lazily on first use (`psycopg_pool.ConnectionPool`); `pool.close()` closes it.
- `mcpctl.db.migrations`: `Migration(version, description, sql)`; `register(component, [..])`
  registers a component's versioned migrations (the store's: `mcpctl.resources.pg_schema`; a log or
  cache adds its own the same way, or names its module in `migrations.COMPONENTS`);
  `migrate()` applies what is pending (`mcpctl db migrate`), `status()` reports each component,
  `require(component)` is what a gateway or command calls before using its tables: an older
  schema raises "run `mcpctl db migrate`", a newer one refuses (this mcpctl is too old).

Versions are per component in one `schema_migrations(component, version, ...)` table, so a
component's migrations are numbered 1, 2, 3 independently of the others'.
"""

from __future__ import annotations

from mcpctl.db.config import ENV_URL, check_flag, database_url

__all__ = ["ENV_URL", "check_flag", "database_url"]
